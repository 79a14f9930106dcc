//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// Run-time function probes, end to end: testdata/plainapp is built without rules
// (its package store has no probe at all) and sdtctl places fbt probes on its
// functions while it runs.

const storeSpec = "fbt:example.com/plainapp/store:"

// plainAppBin builds testdata/plainapp, once for the test binary.
func plainAppBin(t testing.TB) string { return plainAppBuild(t, "plainapp") }

// plainAppBuild builds testdata/plainapp as name, once for the test binary: name
// "plainapp-nodwarf" without DWARF (-ldflags=-w).
func plainAppBuild(t testing.TB, name string) string {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s", runtime.GOARCH)
	}
	var flags []string
	if name == "plainapp-nodwarf" {
		flags = append(flags, "-ldflags=-w")
	}
	return buildModule(t, name, "plainapp", "./cmd/plainapp", flags...)
}

// buildModule builds pkg of testdata/dir, a module of its own, for this machine with
// flags, once per key for the test binary, and returns the binary's path.
func buildModule(t testing.TB, key, dir, pkg string, flags ...string) string {
	t.Helper()
	return testbin.Once(t, key, filepath.Base(pkg), func(bin string) error {
		src, _ := filepath.Abs(filepath.Join("testdata", dir))
		args := append(append([]string{"build", "-o", bin}, flags...), pkg)
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
		cmd.Dir = src
		// For the test's own architecture: under qemu the program runs emulated too.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0", "GOOS=", "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building testdata/%s %s: %v\n%s", dir, strings.Join(flags, " "), err, out)
		}
		return nil
	})
}

// plainApp is a running plainapp serve.
type plainApp struct {
	pid int
	in  io.WriteCloser
	out *bufio.Scanner
}

func startPlainApp(t *testing.T, env ...string) *plainApp {
	t.Helper()
	return startPlainAppBin(t, plainAppBin(t), env...)
}

func startPlainAppBin(t *testing.T, bin string, env ...string) *plainApp {
	t.Helper()
	cmd := testutil.Command(bin, "serve") // under qemu, emulated: the socket and the probes are the program's
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	a := &plainApp{pid: cmd.Process.Pid, in: in, out: bufio.NewScanner(out)}
	if !a.out.Scan() || a.out.Text() != "ready" {
		t.Fatal("plainapp did not start")
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ctlproto.SocketPath(a.pid)); err == nil {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatal("plainapp bound no control socket in a minute")
		}
	}
}

// do sends a serve command and waits until it is done.
func (a *plainApp) do(t *testing.T, line string) {
	t.Helper()
	fmt.Fprintln(a.in, line)
	if !a.out.Scan() || a.out.Text() != "done" {
		t.Fatalf("plainapp: no answer to %q", line)
	}
}

// listed is sdtctl list --json of spec in pid, by probe name.
func listed(t *testing.T, pid int, spec string) map[string]ctlproto.Probe {
	t.Helper()
	out, err := sdtctl(t, "list", "-p", strconv.Itoa(pid), spec, "--json")
	if err != nil {
		t.Fatalf("list %s: %v", spec, err)
	}
	ps := map[string]ctlproto.Probe{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct{ Probe ctlproto.Probe }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("list --json: %v: %q", err, line)
		}
		ps[m.Probe.Name] = m.Probe
	}
	return ps
}

func TestRuntimeProbeList(t *testing.T) {
	a := startPlainApp(t)
	ps := listed(t, a.pid, storeSpec+"*:entry")
	get := ps[storeSpec+"store.(*DB).Get:entry"]
	if get.Kind != "runtime" || len(get.Sites) != 1 || get.Sites[0].State != "unpatched" || get.Enabled {
		t.Fatalf("Get's entry: %+v\nall: %+v", get, ps)
	}
	if fmt.Sprint(get.Args) != "[{db *store.DB  false} {key string  false}]" && !testutil.Emulated() {
		t.Errorf("Get's entry arguments, named from DWARF: %v", get.Args)
	}
	if peek := ps[storeSpec+"store.Peek:entry"]; len(peek.Sites) != 1 || peek.Sites[0].State != "refused" || !strings.Contains(peek.Sites[0].Reason, "no stack check") || !strings.Contains(peek.Sites[0].Reason, "as a leaf") {
		t.Errorf("Peek, a frameless leaf that begins with a load, is not refused with its reasons: %+v", peek)
	}
	ret := listed(t, a.pid, storeSpec+"Get:return")[storeSpec+"store.(*DB).Get:return"]
	if ret.Kind != "runtime" || len(ret.Args) == 0 || ret.Args[0].Name != "latency_ns" || len(ret.Sites) == 0 {
		t.Fatalf("Get's return: %+v", ret)
	}
	// Every function of the program: a list longer than one frame holds comes in several.
	all := listed(t, a.pid, "fbt::*.*:")
	if len(all) < 2000 || all[storeSpec+"store.Sleep:return"].Kind != "runtime" {
		t.Errorf("list fbt::*.*: gave %d probes", len(all))
	}
	// Text: the kind column.
	out, err := sdtctl(t, "list", "-p", strconv.Itoa(a.pid), storeSpec+"Sleep:")
	if err != nil || !strings.Contains(out, "runtime") || !strings.Contains(out, "store.Sleep:entry") {
		t.Fatalf("list: %v\n%s", err, out)
	}
}

func TestRuntimeProbeExactCounts(t *testing.T) {
	for _, gomaxprocs := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("GOMAXPROCS=", gomaxprocs), func(t *testing.T) {
			a := startPlainApp(t, fmt.Sprint("GOMAXPROCS=", gomaxprocs))
			tr := runCmd(cmdTrace, "-p", strconv.Itoa(a.pid), storeSpec+":", "--json")
			waitHeld(t, a.pid, storeSpec+"MayPanic:", 1, 0)
			waitHeld(t, a.pid, storeSpec+"Get:", 1, 0)
			const n = 3000 // more than a return ring holds: calls wait for room rather than drop
			a.do(t, fmt.Sprint("calls ", n))
			if err := tr.end(t, time.Minute); err != nil {
				t.Fatalf("trace: %v\n%s", err, tr.stderr.String())
			}
			counts := map[string]int{}
			for _, line := range strings.Split(strings.TrimSpace(tr.stdout.String()), "\n") {
				var ev struct {
					Event struct {
						Probe string
						Args  []struct {
							Name  string
							Value json.RawMessage
						}
					}
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("%v: %q", err, line)
				}
				counts[ev.Event.Probe]++
				if strings.HasSuffix(ev.Event.Probe, ":return") {
					// -1 is a return whose entry was not seen. 0 is a call shorter than
					// one tick of the counter the return path reads (CNTVCT_EL0 ticks
					// every 16 to 40 ns on arm64, and qemu's moves by the microsecond).
					if lat, err := strconv.ParseInt(string(ev.Event.Args[0].Value), 10, 64); ev.Event.Args[0].Name != "latency_ns" || err != nil || lat < 0 {
						t.Fatalf("a return event without its latency: %q", line)
					}
				}
			}
			panics := (n + 2) / 3 // MayPanic(i) panics when i%3 == 0, i in [0, n)
			want := map[string]int{
				storeSpec + "store.(*DB).Get:entry":  n,
				storeSpec + "store.(*DB).Get:return": n,
				storeSpec + "store.MayPanic:entry":   n,
				storeSpec + "store.MayPanic:return":  n - panics,
			}
			for k, v := range want {
				if counts[k] != v {
					t.Errorf("%s: %d events, want %d", k, counts[k], v)
				}
			}
			if t.Failed() {
				t.Logf("stderr: %s", tr.stderr.String())
			}
		})
	}
}

func TestRuntimeProbeRefusals(t *testing.T) {
	a := startPlainApp(t)
	p := strconv.Itoa(a.pid)
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"enable", "-p", p, "fbt:runtime:mallocgc:entry"}, exitNoMatch, "in runtime"},
		{[]string{"enable", "-p", p, storeSpec + "Peek:entry"}, exitNoMatch, "no stack check"},
		{[]string{"enable", "-p", p, storeSpec + "store.Count:entry"}, exitNoMatch, "inlined into every caller (main.serve)"},
		{[]string{"trace", "-p", p, "fbt:fmt::entry", "-d", "1s"}, exitUsage, "--many"},
		{[]string{"enable", "-p", p, "fbt::*.*:entry"}, exitUsage, "--many"}, // the 256 limit: TestRuntimeFuncProbeRefused in sdt
	} {
		var out, errb syncBuffer
		err := run(c.args, &out, &errb)
		if code := exitCode(err); code != c.code || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("sdtctl %s: exit %d (%v), want %d and %q on stderr; stderr:\n%s", strings.Join(c.args, " "), code, err, c.code, c.says, errb.String())
		}
	}
	// Nothing was placed by the refused requests.
	for name, pr := range listed(t, a.pid, storeSpec+":") {
		if pr.Enabled {
			t.Errorf("%s is on after refused requests", name)
		}
	}
}

func TestRuntimeProbePatchOff(t *testing.T) {
	a := startPlainApp(t, "SDT_PATCH=off")
	var out, errb syncBuffer
	err := run([]string{"enable", "-p", strconv.Itoa(a.pid), storeSpec + "Get:entry"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "SDT_PATCH=off") {
		t.Fatalf("enable under SDT_PATCH=off: %v\n%s", err, errb.String())
	}
}

func TestRuntimeProbeLatency(t *testing.T) {
	a := startPlainApp(t)
	st := runCmd(cmdStat, "-p", strconv.Itoa(a.pid), storeSpec+"Sleep:return", "--hist", "latency_ns", "--json", "-i", "100ms")
	waitHeld(t, a.pid, storeSpec+"Sleep:return", 0, 1)
	for range 3 {
		a.do(t, "sleep 20")
	}
	if err := st.end(t, time.Minute); err != nil {
		t.Fatalf("stat: %v\n%s", err, st.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(st.stdout.String()), "\n")
	last := lines[len(lines)-1]
	var snap struct {
		Stat struct {
			Rows []struct {
				Count    int64
				Min, Max int64
			}
		}
	}
	if err := json.Unmarshal([]byte(last), &snap); err != nil || len(snap.Stat.Rows) != 1 {
		t.Fatalf("last snapshot %q: %v", last, err)
	}
	r := snap.Stat.Rows[0]
	if r.Count != 3 || r.Min < int64(20*time.Millisecond) || r.Max > int64(20*time.Second) {
		t.Fatalf("3 calls of Sleep(20ms): count %d, latency min %d max %d ns", r.Count, r.Min, r.Max)
	}
}

// A command traced from its start: run-time probes are placed before its main runs.
func TestRuntimeProbeFollow(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("under an emulator: sdtctl would exec the emulated command itself, and this machine need not run arm64 binaries")
	}
	bin := plainAppBin(t)
	stdinFrom(t, "sleep 3\nmix\nsleep 4\nsleep 5\n") // the command keeps sdtctl's stdin
	var out, errb syncBuffer
	err := run([]string{"trace", storeSpec + "Sleep:entry", "--json", "--", bin, "serve"}, &out, &errb)
	if err != nil {
		t.Fatalf("trace -- plainapp: %v\n%s", err, errb.String())
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.Contains(line, `"event"`) {
			var ev struct {
				Event struct {
					Args []struct{ Value json.RawMessage }
				}
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil || len(ev.Event.Args) == 0 {
				t.Fatalf("%v: %q", err, line)
			}
			got = append(got, string(ev.Event.Args[0].Value))
		}
	}
	slices.Sort(got) // records of different Ps may arrive in any order
	if strings.Join(got, ",") != "3,4,5" {
		t.Fatalf("Sleep's entries: %v, want 3,4,5\n%s\n%s", got, out.String(), errb.String())
	}
}

// event is one --json trace line's event.
type event struct {
	Probe string
	Args  []struct {
		Name, Type string
		Value      json.RawMessage
	}
}

// traceEvents runs sdtctl trace of spec in a's process while do runs, and returns
// its events.
func traceEvents(t *testing.T, a *plainApp, spec string, do func(), flags ...string) []event {
	t.Helper()
	tr := runCmd(cmdTrace, append([]string{"-p", strconv.Itoa(a.pid), spec, "--json"}, flags...)...)
	waitHeld(t, a.pid, spec, 1, 0)
	do()
	if err := tr.end(t, time.Minute); err != nil {
		t.Fatalf("trace: %v\n%s", err, tr.stderr.String())
	}
	var evs []event
	for _, line := range strings.Split(strings.TrimSpace(tr.stdout.String()), "\n") {
		var m struct{ Event *event }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		if m.Event != nil {
			evs = append(evs, *m.Event)
		}
	}
	return evs
}

// args is an event's arguments as "name type value" strings.
func (e event) args() []string {
	var out []string
	for _, a := range e.Args {
		out = append(out, a.Name+" "+a.Type+" "+string(a.Value))
	}
	return out
}

// The arguments of run-time probes are named and typed from the executable's DWARF.
func TestRuntimeProbeTypedArgs(t *testing.T) {
	needDWARF(t)
	a := startPlainApp(t)
	evs := traceEvents(t, a, storeSpec+"store.(*DB).Get:", func() { a.do(t, "calls 2") })
	var got []string
	for _, e := range evs {
		args := e.args()
		if strings.HasSuffix(e.Probe, ":entry") && len(args) == 2 && strings.HasPrefix(args[0], `db *store.DB "0x`) {
			args[0] = "db *store.DB 0x..."
		}
		if strings.HasSuffix(e.Probe, ":return") && len(args) > 0 && strings.HasPrefix(args[0], "latency_ns int64 ") {
			args[0] = "latency_ns"
		}
		got = append(got, strings.Join(args, ", "))
	}
	// Entries and returns come from different Ps (returns are delivered from their
	// ring), whose records may arrive in any order: compared sorted.
	slices.Sort(got)
	want := []string{
		`db *store.DB 0x..., key string "alpha"`,
		`db *store.DB 0x..., key string "gamma"`,
		`latency_ns, len(r0) int 0, r1 error "non-nil"`,
		`latency_ns, len(r0) int 1, r1 error null`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A predicate on an argument by its name.
	evs = traceEvents(t, a, storeSpec+"store.(*DB).Get:entry", func() { a.do(t, "calls 6") }, "--where", `key == "gamma"`)
	if len(evs) != 3 {
		t.Fatalf("--where key == \"gamma\": %d events, want 3: %+v", len(evs), evs)
	}
}

// Without DWARF, the arguments are the register words.
func TestRuntimeProbeNoDWARF(t *testing.T) {
	a := startPlainAppBin(t, plainAppBuild(t, "plainapp-nodwarf"))
	evs := traceEvents(t, a, storeSpec+"store.Sleep:entry", func() { a.do(t, "sleep 2") })
	if len(evs) != 1 || strings.Join(evs[0].args(), ", ") != "arg0 uint64 2" {
		t.Fatalf("events: %+v", evs)
	}
}

// A signature that is not of the running code is refused, and nothing is placed.
func TestRuntimeProbeWrongSignature(t *testing.T) {
	a := startPlainApp(t)
	cl, err := dial(a.pid)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.c.Close()
	cl.sigs = []ctlproto.FuncSig{{
		Func:   "example.com/plainapp/store.Sleep",
		Spills: []ctlproto.Spill{{Reg: 0, Size: 8, Off: 0}, {Reg: 1, Size: 8, Off: 8}}, // two words: Sleep takes one
		Params: []ctlproto.SigValue{{Name: "s", Type: "string", Kind: "string", Words: []ctlproto.SigWord{{Reg: 0, Size: 8}, {Reg: 1, Size: 8}}}},
	}}
	_, err = cl.call(&ctlproto.Request{Op: ctlproto.OpEnable, Specs: []string{storeSpec + "store.Sleep:entry"}})
	if err == nil || !strings.Contains(err.Error(), "not this program's signature") {
		t.Fatalf("enable with a wrong signature: %v", err)
	}
	if p := listed(t, a.pid, storeSpec+"store.Sleep:entry")[storeSpec+"store.Sleep:entry"]; p.Enabled {
		t.Fatalf("placed with a wrong signature: %+v", p)
	}
}

// needDWARF skips what reads the process's signatures from /proc/PID/exe: under a
// user-mode emulator that is the emulator's executable.
func needDWARF(t *testing.T) {
	t.Helper()
	if testutil.Emulated() {
		t.Skip("under an emulator /proc/PID/exe is the emulator: no signatures to read")
	}
}

// TestRuntimeProbeEnableCounts: enable and disable count a run-time probe's points as
// sites, as list shows them and ps counts them on; enabling them again says they were
// already on.
func TestRuntimeProbeEnableCounts(t *testing.T) {
	a := startPlainApp(t)
	p := strconv.Itoa(a.pid)
	spec := storeSpec + "store.(*DB).Get:"
	want := 0
	for _, pr := range listed(t, a.pid, spec) {
		for _, s := range pr.Sites {
			if s.State != "refused" {
				want++
			}
		}
	}
	if want < 2 {
		t.Fatalf("Get has %d points", want)
	}
	out, err := sdtctl(t, "enable", "-p", p, spec, "--json")
	var r struct{ Sites, AlreadyOn int }
	if err != nil || json.Unmarshal([]byte(out), &struct {
		Sites     *int `json:"sites"`
		AlreadyOn *int `json:"already_on"`
	}{&r.Sites, &r.AlreadyOn}) != nil || r.Sites != want {
		t.Fatalf("enable: %v %s: want %d sites", err, out, want)
	}
	ps, err := sdtctl(t, "ps", "--json")
	if err != nil || !strings.Contains(ps, fmt.Sprintf(`"sites_on":%d`, want)) {
		t.Errorf("ps after enable of %d points: %v %s", want, err, ps)
	}
	if out, err = sdtctl(t, "enable", "-p", p, spec); err != nil || !strings.Contains(out, fmt.Sprintf("enabled 0 sites; %d were already on", want)) {
		t.Errorf("enable again: %v %s", err, out)
	}
	if out, err = sdtctl(t, "disable", "-p", p, spec); err != nil || !strings.Contains(out, fmt.Sprintf("disabled %d sites", want)) {
		t.Errorf("disable: %v %s", err, out)
	}
}

// TestRuntimeProbeStacks: stat --by stack of a run-time entry probe gives stacks whose
// leaf is the probed function, without gosdt's own frames (fprobe's handler), and
// the row, the folded leaf and the pprof profile name the function.
func TestRuntimeProbeStacks(t *testing.T) {
	a := startPlainApp(t)
	dir := t.TempDir()
	prof, fold := filepath.Join(dir, "p.pb.gz"), filepath.Join(dir, "f.folded")
	spec := storeSpec + "store.(*DB).Get:entry"
	st := runCmd(cmdStat, "-p", strconv.Itoa(a.pid), spec, "--by", "stack", "--pprof", prof, "--folded", fold, "-i", "100ms")
	waitHeld(t, a.pid, spec, 0, 1)
	a.do(t, "calls 50")
	time.Sleep(300 * time.Millisecond)
	if err := st.end(t, time.Minute); err != nil {
		t.Fatalf("stat: %v\n%s", err, st.stderr.String())
	}
	out := st.stdout.String()
	if strings.Contains(out, "fprobe.") || !regexp.MustCompile(`fbt:example.com/plainapp/store:store\.\(\*DB\)\.Get:entry\n\s+example.com/plainapp/store\.\(\*DB\)\.Get\n`).MatchString(out) {
		t.Errorf("stack rows: want the probe named with its function, then Get's frame, no fprobe frame:\n%s", out)
	}
	b, err := os.ReadFile(fold)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "fprobe.") || !strings.Contains(string(b), ";example.com/plainapp/store.(*DB).Get;fbt:example.com/plainapp/store:store.(*DB).Get:entry 50\n") {
		t.Errorf("folded:\n%s", b)
	}
	top, err := exec.Command("go", "tool", "pprof", "-top", prof).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, top)
	}
	if !regexp.MustCompile(`(?m)^\s+50\s+100%\s+100%\s+50\s+100%\s+example.com/plainapp/store\.\(\*DB\)\.Get$`).Match(top) || strings.Contains(string(top), "fprobe") {
		t.Errorf("pprof -top: want all 50 flat in Get:\n%s", top)
	}
}

// A command that calls a probed function 1,000 times and exits at once, traced from
// its start: the run-time probes placed before its main fire from its first call on,
// and every entry is delivered, however late sdtctl connects (the command waits for it
// as for a spec that names no function).
func TestRuntimeProbeFollowShortCommand(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("under an emulator: sdtctl would exec the emulated command itself, and this machine need not run arm64 binaries")
	}
	bin := plainAppBin(t)
	stdinFrom(t, "calls 1000\n")
	var out, errb syncBuffer
	if err := run([]string{"trace", storeSpec + "Get:entry", "--json", "--", bin, "serve"}, &out, &errb); err != nil {
		t.Fatalf("trace -- plainapp: %v\n%s", err, errb.String())
	}
	n, summary := 0, ""
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		switch {
		case strings.Contains(line, `"event"`):
			n++
		case strings.Contains(line, `"drops"`):
			summary = line
		}
	}
	if n != 1000 || !strings.Contains(summary, `"drops":0`) {
		t.Fatalf("%d entries of (*DB).Get, want 1000 and no drop; summary %s\n%s", n, summary, errb.String())
	}
}

// stdinFrom makes text sdtctl's stdin, which a command it starts keeps, until t ends.
func stdinFrom(t *testing.T, text string) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = old; f.Close() })
}

// TestRuntimeReturnsOutliveCommand: a command that calls a function with run-time
// probes 1,000 times and ends at once (os.Exit, a panic, SIGKILL to itself), while
// returns of its last calls would wait in the process for a drain: every entry and
// every return reaches the trace, or is counted dropped; none is lost in silence.
func TestRuntimeReturnsOutliveCommand(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("under an emulator: sdtctl would exec the emulated command itself, and this machine need not run arm64 binaries")
	}
	bin := plainAppBin(t)
	for _, c := range []struct {
		how     string
		procs   int
		bufsize string // the smallest buffers: what does not fit is counted dropped
	}{{"exit", 1, ""}, {"exit", 2, ""}, {"exit", 8, ""}, {"panic", 2, ""}, {"kill", 1, ""}, {"kill", 2, ""}, {"kill", 8, ""}, {"kill", 1, "4k"}} {
		how := c.how
		t.Run(fmt.Sprintf("%s/GOMAXPROCS=%d/bufsize=%s", how, c.procs, c.bufsize), func(t *testing.T) {
			t.Setenv("GOMAXPROCS", strconv.Itoa(c.procs)) // the command's
			stdinFrom(t, "calls 1000\nexit "+how+"\n")
			var out, errb syncBuffer
			args := []string{"trace", storeSpec + "Get:", "--json"}
			if c.bufsize != "" {
				args = append(args, "--bufsize", c.bufsize)
			}
			err := run(append(args, "--", bin, "serve"), &out, &errb)
			if err != nil && how == "exit" {
				t.Fatalf("trace -- plainapp: %v\n%s", err, errb.String())
			}
			entries, returns, drops := getEventsOf(t, out.String(), "")
			if drops < 0 || entries+returns+drops != 2000 || c.bufsize == "" && (entries != 1000 || drops != 0) {
				t.Fatalf("%d entries and %d returns of (*DB).Get, %d dropped: want 1000 of each delivered or counted dropped\n%s", entries, returns, drops, errb.String())
			}
			if drops > 0 {
				t.Logf("%d entries and %d returns delivered, %d events dropped, and said", entries, returns, drops)
			}
		})
	}
}

// TestRuntimeReturnsWhereOutliveCommand: a trace with --where of a command that
// calls a function with run-time probes 1,000 times and ends at once (os.Exit, a
// panic, SIGKILL to itself) gets exactly the returns its predicate passes, on a
// result value (half of them) or on the interface result (the other half): the
// return path runs the predicate and writes those into the trace's buffers, which
// outlive the command; nothing is dropped, and nothing is said lost.
func TestRuntimeReturnsWhereOutliveCommand(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("under an emulator: sdtctl would exec the emulated command itself, and this machine need not run arm64 binaries")
	}
	bin := plainAppBin(t)
	for _, c := range []struct {
		how   string
		procs int
		where string
		want  string // len(r0)'s value in every event: 1 for "alpha", found; 0 for "gamma", missing
	}{
		{"exit", 1, `r1 == "<nil>"`, "1"}, {"exit", 2, "arg1 == 0", "0"}, {"exit", 8, `r1 == "<nil>"`, "1"},
		{"panic", 2, `r1 != "<nil>" && latency_ns >= 0`, "0"},
		{"kill", 1, "arg1 > 0", "1"}, {"kill", 2, `r1 == "<nil>"`, "1"}, {"kill", 8, `arg1 < 1 || r1 == "x"`, "0"},
	} {
		t.Run(fmt.Sprintf("%s/GOMAXPROCS=%d", c.how, c.procs), func(t *testing.T) {
			t.Setenv("GOMAXPROCS", strconv.Itoa(c.procs)) // the command's
			stdinFrom(t, "calls 1000\nexit "+c.how+"\n")
			var out, errb syncBuffer
			err := run([]string{"trace", storeSpec + "Get:return", "--where", c.where, "--json", "--", bin, "serve"}, &out, &errb)
			if err != nil && c.how == "exit" {
				t.Fatalf("trace -- plainapp: %v\n%s", err, errb.String())
			}
			_, returns, drops := getEventsOf(t, out.String(), c.want)
			if returns != 500 || drops != 0 {
				t.Fatalf("--where %s: %d returns of (*DB).Get, %d dropped: want 500, 0\n%s", c.where, returns, drops, errb.String())
			}
			if strings.Contains(errb.String(), "lost") {
				t.Fatalf("the trace says events were lost:\n%s", errb.String())
			}
		})
	}
}

// getEventsOf counts the entry and return events of (*DB).Get in a trace's --json
// output, each return's len(r0) want ("": any), and reads its drops (-1: not said).
func getEventsOf(t *testing.T, out, want string) (entries, returns, drops int) {
	t.Helper()
	drops = -1
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m struct {
			Event *event
			Drops *int
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case m.Event != nil && strings.HasSuffix(m.Event.Probe, "Get:entry"):
			entries++
		case m.Event != nil && strings.HasSuffix(m.Event.Probe, "Get:return"):
			returns++
			if a := m.Event.Args; want != "" && (len(a) < 2 || a[1].Name != "len(r0)" || string(a[1].Value) != want) {
				t.Fatalf("an event the predicate should have rejected: %s", line)
			}
		case m.Drops != nil:
			drops = *m.Drops
		}
	}
	return entries, returns, drops
}

// TestRuntimeReturnsWhereBeside: a trace with --where and one without, of the same
// function's returns at once, each get theirs exactly: the one 500 (the other 500
// counted filtered), the other 1,000; and again when the process is killed right
// after its calls, at GOMAXPROCS 1, 2 and 8.
func TestRuntimeReturnsWhereBeside(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("under an emulator: the command's returns are checked natively")
	}
	for _, procs := range []int{1, 2, 8} {
		for _, kill := range []bool{false, true} {
			t.Run(fmt.Sprintf("GOMAXPROCS=%d/kill=%v", procs, kill), func(t *testing.T) {
				a := startPlainApp(t, "GOMAXPROCS="+strconv.Itoa(procs))
				pid := strconv.Itoa(a.pid)
				spec := storeSpec + "Get:return"
				where := runCmd(cmdTrace, "-p", pid, spec, "--json", "--where", `r1 == "<nil>"`)
				all := runCmd(cmdTrace, "-p", pid, spec, "--json")
				waitHeld(t, a.pid, spec, 2, 0)
				a.do(t, "calls 1000")
				if kill {
					fmt.Fprintln(a.in, "exit kill")
				}
				for _, c := range []struct {
					name string
					r    *running
					n    int
					want string
				}{{"--where", where, 500, "1"}, {"no predicate", all, 1000, ""}} {
					var err error
					if kill {
						select {
						case err = <-c.r.done:
						case <-time.After(time.Minute):
							t.Fatalf("%s: the trace did not end with the process", c.name)
						}
					} else {
						err = c.r.end(t, time.Minute)
					}
					if err != nil && !kill {
						t.Fatalf("%s: %v\n%s", c.name, err, c.r.stderr.String())
					}
					_, returns, drops := getEventsOf(t, c.r.stdout.String(), c.want)
					if returns != c.n || drops != 0 {
						t.Fatalf("%s: %d returns, %d dropped: want %d, 0\n%s", c.name, returns, drops, c.n, c.r.stderr.String())
					}
					if !kill && c.want != "" {
						var filtered int
						for _, line := range strings.Split(c.r.stdout.String(), "\n") {
							var m struct{ Filtered *int }
							if json.Unmarshal([]byte(line), &m) == nil && m.Filtered != nil {
								filtered = *m.Filtered
							}
						}
						if filtered != 500 {
							t.Fatalf("%s: %d counted filtered, want 500\n%s", c.name, filtered, c.r.stdout.String())
						}
					}
				}
			})
		}
	}
}
