package fbt_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testutil"
)

// listed is a probe as `sdtctl list --json` prints it, live ({"pid", "probe": {...}})
// or offline ({"probe": NAME, "sites": [...]}).
type listed struct {
	Name  string
	Sites int
}

func parseList(t *testing.T, out string) []listed {
	t.Helper()
	var ps []listed
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var live struct {
			Probe struct {
				Name  string
				Sites []json.RawMessage
			}
		}
		var off struct {
			Probe string
			Sites []json.RawMessage
		}
		if json.Unmarshal([]byte(line), &live) == nil && live.Probe.Name != "" {
			ps = append(ps, listed{live.Probe.Name, len(live.Probe.Sites)})
		} else if err := json.Unmarshal([]byte(line), &off); err == nil && off.Probe != "" {
			ps = append(ps, listed{off.Probe, len(off.Sites)})
		} else {
			t.Fatalf("list --json: %q", line)
		}
	}
	return ps
}

// checkNames checks a listing of package lib's probes (testdata/example/lib): every
// probe once, none named after a traced copy, and the hand-written probes of the
// instrumented functions with a site in the function and one in its copy.
func checkNames(t *testing.T, what string, ps []listed) {
	t.Helper()
	const lib = "example.com/fbtex/lib:lib."
	seen := map[string]int{}
	for _, p := range ps {
		seen[p.Name]++
		if seen[p.Name] == 2 {
			t.Errorf("%s: %s listed more than once", what, p.Name)
		}
		if strings.Contains(p.Name, "__sdt_fbt") {
			t.Errorf("%s: %s is named after a traced copy", what, p.Name)
		}
	}
	sites := map[string]int{}
	for _, p := range ps {
		sites[p.Name] += p.Sites
	}
	for name, want := range map[string]int{
		"mix:" + lib + "Serve:served":            2,
		"mix:" + lib + "Serve.func1:served":      2, // a function literal: its copy's is func2
		"mix:" + lib + "Serve:step":              2, // defined in another package, initialised first
		"mix:" + lib + "Serve:handle":            4, // a latency probe: Start's guard and End's fire, twice
		"mix:" + lib + "(*Server).Handle:served": 2,
		"mix:" + lib + "Each[...]:served":        2,
		"fbt:" + lib + "Serve:entry":             2, // the gate and the copy's fire
		"fbt:" + lib + "Serve:return":            4, // the gate, two returns, the deferred check
	} {
		if sites[name] != want {
			t.Errorf("%s: %s has %d sites, want %d", what, name, sites[name], want)
		}
	}
}

// TestNamesWhateverIsOn: a hand-written probe inside a function that rules also
// instrument has a site in the function and one in its traced copy, which runs while
// the function's fbt probes are on. Both are named after the function, offline and
// live, so that list shows the probe once and a spec of the user's function counts its
// fires whether or not the fbt probes are on.
func TestNamesWhateverIsOn(t *testing.T) {
	dir := exampleDir(t)
	rules := filepath.Join(dir, "mix.rules")
	bin, out, err := buildCmd(t, "./cmd/mix", rules)
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sdtctl := sdtctlBin(t)
	ctl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(sdtctl, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("sdtctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Offline, on the binary: for each architecture (what the file holds is read the
	// same way on any host).
	checkNames(t, "list BINARY", parseList(t, ctl("list", "--json", bin)))
	if text := ctl("list", bin, "mix::lib.Serve:served"); strings.Count(text, "mix:example.com/fbtex/lib:lib.Serve:served") != 1 {
		t.Errorf("list BINARY: want the probe once:\n%s", text)
	}
	if other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]; other != "" && !testing.Short() {
		obin, out, err := buildCmdEnv(t, []string{"GOARCH=" + other}, "./cmd/mix", rules)
		if err != nil {
			t.Fatalf("build for %s: %v\n%s", other, err, out)
		}
		checkNames(t, "list BINARY ("+other+")", parseList(t, ctl("list", "--json", obin)))
	}

	if testutil.Emulated() {
		t.Skip("the control socket under qemu: covered by cmd/sdtctl's tests")
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	cmd := testutil.Command(bin)
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("mix did not start: %q", sc.Text())
	}
	pid := fmt.Sprint(cmd.Process.Pid)
	work := func(n int) {
		t.Helper()
		for range n {
			io.WriteString(in, "go\n")
			if !sc.Scan() || sc.Text() != "done" {
				t.Fatalf("workload: %q", sc.Text())
			}
		}
	}
	work(1)
	checkNames(t, "list (fbt off)", parseList(t, ctl("list", "-p", pid, "--json", "::lib.*:")))

	// stat counts the fires of lib.Serve's probe, exactly, whichever body runs.
	stat := func(spec string, calls int) int64 {
		t.Helper()
		var out, errb bytes.Buffer
		st := exec.Command(sdtctl, "stat", "-p", pid, spec, "--json", "-i", "1h")
		st.Stdout, st.Stderr = &out, &errb
		if err := st.Start(); err != nil {
			t.Fatal(err)
		}
		holder := fmt.Sprintf("sdtctl pid %d stat", st.Process.Pid)
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(ctl("list", "-p", pid, spec), holder); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				st.Process.Kill()
				st.Wait()
				t.Fatalf("stat %s did not start in 30 s: %s", spec, errb.String())
			}
		}
		work(calls)
		st.Process.Signal(os.Interrupt) // Ctrl-C: its last snapshot, then the end
		if err := st.Wait(); err != nil {
			t.Fatalf("stat %s: %v\n%s", spec, err, errb.String())
		}
		var snap struct {
			Stat struct {
				Rows []struct {
					Key   string
					Count int64
				}
			}
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &snap); err != nil {
			t.Fatalf("stat %s: %v\n%s", spec, err, out.String())
		}
		var n int64
		for _, r := range snap.Stat.Rows {
			if strings.Contains(r.Key, "__sdt_fbt") {
				t.Errorf("stat %s: a row named after a traced copy: %s", spec, r.Key)
			}
			n += r.Count
		}
		return n
	}
	for _, fbtOn := range []bool{false, true} {
		if fbtOn {
			ctl("enable", "-p", pid, "fbt::lib.Serve:", "fbt::lib.(*Server).Handle:")
		}
		for spec, per := range map[string]int64{
			"mix::lib.Serve:served":            1,
			"mix::lib.Serve.func1:served":      1,
			"mix::lib.Serve:step":              3,
			"mix::lib.Serve:handle":            1,
			"mix::lib.(*Server).Handle:served": 1,
		} {
			if got := stat(spec, 4); got != 4*per {
				t.Errorf("fbt on %v: stat %s counted %d fires, want %d", fbtOn, spec, got, 4*per)
			}
		}
		checkNames(t, fmt.Sprintf("list (fbt on %v)", fbtOn), parseList(t, ctl("list", "-p", pid, "--json", "::lib.*:")))
	}
	ctl("disable", "-p", pid, "fbt:::")
}
