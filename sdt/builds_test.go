package sdt_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// TestBuildsAndModes builds testdata/selfcheck with the flags that change Go's code
// (race instrumentation, PIE, no inlining, coverage counters) and starts it in every
// SDT_MODE and with SDT_PATCH=off. The program checks its own probes' fires; this test
// checks what it saw of its sites: sealed where the shape is the plain one, never
// sealed where patching is off or the check was not inlined.
func TestBuildsAndModes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program several times")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the test program with:", err)
	}
	type run struct {
		env    []string
		sealed bool // every site sealed (on platforms that patch)
		sites  bool // sites are found at all
	}
	cases := []struct {
		name  string
		flags []string
		runs  []run
	}{
		{"default", nil, []run{
			{nil, true, true},
			{[]string{"SDT_MODE=on"}, true, true},
			{[]string{"SDT_MODE=signal"}, true, true},
			{[]string{"SDT_PATCH=off"}, false, true},
		}},
		{"pie", []string{"-buildmode=pie"}, []run{{nil, true, true}}},
		{"race", []string{"-race"}, []run{{nil, true, true}}},
		// Nothing is inlined: the only check is inside sdt's own Probe1 body.
		{"noinline", []string{"-gcflags=all=-N -l"}, []run{{nil, false, false}}},
		// Coverage counters make Probe1 too big to inline: the same as noinline.
		{"cover", []string{"-cover"}, []run{{nil, false, false}}},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "race" && !raceSupported() {
				t.Skip("-race not supported on", runtime.GOOS+"/"+runtime.GOARCH)
			}
			t.Parallel()
			bin := filepath.Join(dir, c.name)
			args := append(append([]string{"build", "-o", bin}, c.flags...), "./testdata/selfcheck")
			if out, err := exec.Command(gobin, args...).CombinedOutput(); err != nil {
				if c.name == "race" && strings.Contains(string(out), "-race requires cgo") {
					t.Skip("-race needs cgo, which a cross-build (as under qemu) does not have")
				}
				t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			for _, r := range c.runs {
				out, err := testutil.Output(bin, append(append(os.Environ(), "GOCOVERDIR="+t.TempDir()), r.env...))
				if err != nil && strings.Contains(string(out), "Could not open '/lib/ld-linux") {
					// A PIE is dynamically linked: the emulator needs the target's loader.
					t.Skipf("the emulator lacks the target's dynamic loader for a PIE: %s", out)
				}
				if err != nil {
					t.Fatalf("%v %s: %v\n%s", r.env, bin, err, out)
				}
				var probes, sites, sealed, branch int
				if _, err := fmt.Sscanf(string(out), "probes=%d sites=%d sealed=%d branch=%d", &probes, &sites, &sealed, &branch); err != nil {
					t.Fatalf("%v: output %q: %v", r.env, out, err)
				}
				t.Logf("%v: %s", r.env, strings.TrimSpace(string(out)))
				switch {
				case probes < 2:
					t.Errorf("%v: List found %d probes, want 2", r.env, probes)
				case matching && r.sites && sites == 0:
					t.Errorf("%v: no site found", r.env)
				case !r.sites && sites != 0:
					t.Errorf("%v: %d sites found in a build whose checks are not inlined", r.env, sites)
				case patching && r.sealed && sealed != sites:
					t.Errorf("%v: %d of %d sites sealed", r.env, sealed, sites)
				case !r.sealed && sealed != 0:
					t.Errorf("%v: %d sites sealed, want none", r.env, sealed)
				}
			}
		})
	}
}

func raceSupported() bool {
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "freebsd/amd64", "windows/amd64":
		return true
	}
	return false
}

// TestLinksUnoptimized links a program that imports sdt with -gcflags=all=-N -l (as a
// debugger's build does) for each architecture whose run-time probes have stubs: the
// linker checks each chain of nosplit calls from those stubs against its limit, and
// without optimization every helper on the chain is a frame of its own. A stub whose
// frame grows by a word breaks every such build of every program.
func TestLinksUnoptimized(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("under an emulator: the native run links both architectures")
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			testbin.Build(t, "", goarch, "./testdata/selfcheck", "-gcflags=all=-N -l")
		})
	}
}
