package sled_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sled"
	"github.com/gosdt/gosdt/sled/offline"
)

// TestSearchBuilds: in real programs of both architectures, built with the flags that
// change where sites land, every site that a search of all the text finds (package
// offline, which reads everything) lies in the functions that start-up discovery
// chooses from the inline trees (FileSearch: the same code, on the file's tables).
// The programs: testdata/sites (sites in plain, guarded, generic, closure, deferred
// and cross-package inlined code), sdt's selfcheck, the test binaries of sdt and
// bench (hundreds of sites of every shape), and fbt's example instrumented by rules.
func TestSearchBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	if testutil.Emulated() {
		// The programs are built by the go command for both architectures and read as
		// files: the native run checks the same binaries, in a fraction of the time.
		t.Skip("under an emulator: the native run checks both architectures' builds")
	}
	defer sled.SetProbePackage("github.com/gosdt/gosdt/sdt")() // TestMain's is the fake one
	for _, goarch := range []string{"amd64", "arm64"} {
		for _, c := range []struct {
			name, pkg string
			flags     []string
		}{
			{"sites", "./testdata/sites", nil},
			{"sites-nomaininline", "./testdata/sites", []string{"-gcflags=-l"}},
			{"sites-noinline", "./testdata/sites", []string{"-gcflags=all=-l"}},
			{"sites-race", "./testdata/sites", []string{"-race"}},
			{"sites-pie", "./testdata/sites", []string{"-buildmode=pie"}},
			{"selfcheck", "../sdt/testdata/selfcheck", nil},
			{"selfcheck-race", "../sdt/testdata/selfcheck", []string{"-race"}},
		} {
			t.Run(goarch+"/"+c.name, func(t *testing.T) {
				checkSearch(t, testbin.Build(t, "", goarch, c.pkg, c.flags...), !slices.Contains(c.flags, "-gcflags=all=-l"))
			})
		}
		for _, pkg := range []string{"sdt", "bench"} {
			t.Run(goarch+"/"+pkg+".test", func(t *testing.T) {
				checkSearch(t, buildTest(t, goarch, "../"+pkg), true)
			})
		}
		t.Run(goarch+"/fbt-example", func(t *testing.T) {
			checkSearch(t, buildFBT(t, goarch), true)
		})
	}
}

// checkSearch checks that every site offline finds in bin lies in what start-up
// discovery would search; sites says whether the program must have some outside
// package sdt (a build with inlining).
func checkSearch(t *testing.T, bin string, sites bool) {
	t.Helper()
	full, err := offline.Discover(bin)
	if err != nil {
		t.Fatal(err)
	}
	text, ranges, how, err := sled.FileSearch(bin)
	if err != nil {
		t.Fatal(err)
	}
	if ranges == nil || !strings.Contains(how, "inline trees") {
		t.Fatalf("search: %s", how)
	}
	searched, outside := 0, 0
	for _, r := range ranges {
		searched += r[1] - r[0]
	}
	for _, s := range full.Sites {
		off := int(uint64(s.Addr) - text)
		if _, ok := slices.BinarySearchFunc(ranges, off, func(r [2]int, off int) int {
			switch {
			case off < r[0]:
				return 1
			case off >= r[1]:
				return -1
			}
			return 0
		}); !ok {
			h := s.Describe()
			t.Errorf("site %#x (%s, %s:%d, %s) is not searched", s.Addr, h.Func, h.File, h.Line, s.Kind)
		}
		if h := s.Describe(); h.Module != sled.ProbePackage() {
			outside++
		}
	}
	if sites && outside == 0 {
		t.Errorf("no site outside package sdt found in %s", bin)
	}
	t.Logf("%d sites (%d outside sdt); %d of %d bytes of text searched, %d ranges", len(full.Sites), outside, searched, full.TextBytes, len(ranges))
}

// buildTest builds the test binary of package dir for linux/goarch.
func buildTest(t *testing.T, goarch, dir string) string {
	out := filepath.Join(t.TempDir(), filepath.Base(dir)+".test")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "test", "-c", "-o", out, dir)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c %s: %v\n%s", dir, err, msg)
	}
	return out
}

// buildFBT builds fbt's example program for linux/goarch with its rules, through
// sdtctl toolexec (built for the go command's own architecture, which runs it).
func buildFBT(t *testing.T, goarch string) string {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	tmp := t.TempDir()
	sdtctl := filepath.Join(tmp, "sdtctl")
	cmd := exec.Command(gobin, "build", "-o", sdtctl, "../cmd/sdtctl")
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=", "GOFLAGS=", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build sdtctl: %v\n%s", err, msg)
	}
	dir, err := filepath.Abs("../internal/fbt/testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "ex")
	cmd = exec.Command(gobin, "build", "-o", bin, "-toolexec", sdtctl+" toolexec -rules "+filepath.Join(dir, "fbt.rules"), "./cmd/ex")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the fbt example: %v\n%s", err, msg)
	}
	return bin
}
