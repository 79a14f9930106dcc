//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// TestNameSeveral: -n NAME with two processes of that name runs on both, each event
// and table with its pid (trace merges the streams, stat shows a table per process);
// without -n, trace and stat refuse, naming both.
func TestNameSeveral(t *testing.T) {
	a := startTarget(t)
	b := startAnother(t)
	pa, pb := strconv.Itoa(a), strconv.Itoa(b)

	_, err := sdtctl(t, "trace", "e2e:::tick", "-c", "1")
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), pa+" (target)") || !strings.Contains(err.Error(), pb+" (target)") {
		t.Errorf("trace with two processes and no -p/-n: %v, want a refusal naming both", err)
	}
	if _, err := sdtctl(t, "stat", "-p", pa, "-n", "target", "e2e:::tick", "-d", "100ms"); exitCode(err) != exitUsage {
		t.Errorf("stat -p and -n: %v, want a usage error", err)
	}

	// trace: both processes' events, each with its pid; a summary per process.
	out, err := sdtctl(t, "trace", "-n", "target", "e2e:::tick", "-d", "500ms", "--json")
	if err != nil {
		t.Fatal(err)
	}
	events, summaries := map[int]int{}, map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct {
			Pid    int
			Event  json.RawMessage
			Events *int
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case rec.Event != nil:
			events[rec.Pid]++
		case rec.Events != nil:
			summaries[rec.Pid] = true
		}
	}
	if events[a] == 0 || events[b] == 0 || !summaries[a] || !summaries[b] {
		t.Errorf("trace -n target --json: events by pid %v, summaries %v; want both %d and %d", events, summaries, a, b)
	}
	// text: each line with its process's pid
	out, err = sdtctl(t, "trace", "-n", "target", "e2e:::tick", "-d", "500ms")
	if err != nil || !strings.Contains(out, " "+pa+"/") || !strings.Contains(out, " "+pb+"/") {
		t.Errorf("trace -n target: %v, want lines of both pids:\n%.400s", err, out)
	}
	// -c counts the events of all of them
	out, err = sdtctl(t, "trace", "-n", "target", "e2e:::tick", "-c", "7")
	if n := strings.Count(out, "e2e:main:main.step:tick"); err != nil || n != 7 {
		t.Errorf("trace -n target -c 7: %v, %d events", err, n)
	}

	// stat: a table per process, each headed by its pid
	out, err = sdtctl(t, "stat", "-n", "target", "e2e:::tick", "-d", "500ms", "-i", "200ms", "--by", "name")
	if err != nil || !strings.Contains(out, "pid "+pa+", by name") || !strings.Contains(out, "pid "+pb+", by name") {
		t.Errorf("stat -n target: %v, want tables of both pids:\n%s", err, out)
	}

	// list, enable, disable: both, each said by its pid
	out, err = sdtctl(t, "list", "-n", "target", "e2e:::tick")
	if err != nil || !strings.Contains(out, "pid "+pa+" (target)") || !strings.Contains(out, "pid "+pb+" (target)") {
		t.Errorf("list -n target: %v\n%s", err, out)
	}
	out, err = sdtctl(t, "enable", "-n", "target", "e2e:::tick")
	if err != nil || !strings.Contains(out, "pid "+pa+" (target): enabled 1 site\n") || !strings.Contains(out, "pid "+pb+" (target): enabled 1 site\n") {
		t.Errorf("enable -n target: %v\n%s", err, out)
	}
	out, err = sdtctl(t, "disable", "-n", "target", "e2e:::tick")
	if err != nil || !strings.Contains(out, "pid "+pa+" (target): disabled 1 site\n") || !strings.Contains(out, "pid "+pb+" (target): disabled 1 site\n") {
		t.Errorf("disable -n target: %v\n%s", err, out)
	}
}

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// exitDuring runs sdtctl args against pid, kills pid once stdout has what started
// says, and returns sdtctl's error, stdout and stderr. The killed process stays a
// zombie until the test ends (nobody waits for it): a process that exits closes its
// socket before its parent reaps it.
func exitDuring(t *testing.T, pid int, started string, args ...string) (error, string, string) {
	t.Helper()
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(args, &out, &errb) }()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(out.String(), started); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sdtctl %s: no %q in 60 s", strings.Join(args, " "), started)
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case err := <-done:
		return err, out.String(), errb.String()
	case <-time.After(60 * time.Second):
		t.Fatalf("sdtctl %s still runs 60 s after its process was killed", strings.Join(args, " "))
	}
	return nil, "", ""
}

// sdtctlWithin is sdtctl(t, args...), or an error of its own when it runs for a minute.
func sdtctlWithin(t *testing.T, args ...string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		var out, errb syncBuffer
		done <- run(args, &out, &errb)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		return fmt.Errorf("still running after 60 s")
	}
}

// sdtctlBinary builds sdtctl once for the tests that run it as a program.
func sdtctlBinary(t *testing.T) string {
	t.Helper()
	return testbin.Sdtctl(t)
}

// TestExitCodes: each failure class has the exit code sdtctl --help gives it.
func TestExitCodes(t *testing.T) {
	pid := startTarget(t)
	p := strconv.Itoa(pid)
	sleep := exec.Command("sleep", "600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	notGosdt := strconv.Itoa(sleep.Process.Pid)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"list", "-p", "999999999"}, exitNoProcess},
		{[]string{"trace", "-p", "999999999", "e2e:::tick"}, exitNoProcess},
		{[]string{"stat", "-n", "nosuchname", "e2e:::tick"}, exitNoProcess},
		{[]string{"enable", "-n", "nosuchname", "e2e:::tick"}, exitNoProcess},
		{[]string{"list", "-p", notGosdt}, exitNotGosdt},
		{[]string{"trace", "-p", notGosdt, "e2e:::tick"}, exitNotGosdt},
		{[]string{"list", "-p", p, "nosuch:::probe"}, exitNoMatch},
		{[]string{"list", "-n", "target", "nosuch:::probe"}, exitNoMatch},
		{[]string{"enable", "-p", p, "nosuch:::probe"}, exitNoMatch},
		{[]string{"disable", "-p", p, "nosuch:::probe"}, exitNoMatch},
		{[]string{"trace", "-p", p, "nosuch:::probe", "-c", "1"}, exitNoMatch},
		{[]string{"stat", "-p", p, "nosuch:::probe", "-d", "100ms"}, exitNoMatch},
		{[]string{"list", buildTarget(t), "nosuch:::probe"}, exitNoMatch},
		{[]string{"list", "-p", p, "a:b:c:d:e"}, exitBadSpec},
		{[]string{"enable", "-p", p, "[x"}, exitBadSpec},
		{[]string{"trace", "-p", p, "x y"}, exitBadSpec},
		{[]string{"stat", "-p", p, "a:b:c:d:e"}, exitBadSpec},
		{[]string{"trace", "-p", p, "e2e:::tick", "-d", "-1s"}, exitUsage},
		{[]string{"stat", "-p", p, "e2e:::tick", "-d", "-1s"}, exitUsage},
		{[]string{"trace", "-p", p, "-n", "target", "e2e:::tick", "-c", "1"}, exitUsage},
	} {
		if err := sdtctlWithin(t, c.args...); exitCode(err) != c.code {
			t.Errorf("sdtctl %v: exit %d (%v), want %d", c.args, exitCode(err), err, c.code)
		}
	}
	// demo starts a workload (sdtctl itself): the binary, not this test.
	bin := sdtctlBinary(t)
	for _, args := range [][]string{{"demo", "-t", "-1s"}, {"demo", "-t", "0"}, {"demo", "-t", "50ms"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "at least 100ms") {
			t.Errorf("sdtctl %v: %v, want exit %d and the least phase:\n%.300s", args, err, exitUsage, out)
		}
	}

	// A process that exits during a trace: exit 8, and what was received.
	err, out, stderr := exitDuring(t, pid, "e2e:main:main.step:tick", "trace", "-p", p, "e2e:::tick")
	n := strings.Count(out, "e2e:main:main.step:tick")
	if exitCode(err) != exitExited || !strings.Contains(err.Error(), fmt.Sprintf("process exited during the trace: %d events received", n)) ||
		!strings.Contains(stderr, fmt.Sprintf("%d events in ", n)) || !strings.Contains(stderr, "dropped until the process exited") {
		t.Errorf("trace of a process that exits: exit %d (%v), %d events; stderr:\n%s", exitCode(err), err, n, stderr)
	}
	pid = startAnother(t)
	err, out, _ = exitDuring(t, pid, `"event"`, "trace", "-p", strconv.Itoa(pid), "e2e:::tick", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		Pid    int
		Events int
		Exited bool
	}
	if exitCode(err) != exitExited || json.Unmarshal([]byte(lines[len(lines)-1]), &sum) != nil || !sum.Exited ||
		sum.Pid != pid || sum.Events != len(lines)-1 {
		t.Errorf("trace --json of a process that exits: exit %d (%v), last line %q (%d events)", exitCode(err), err, lines[len(lines)-1], len(lines)-1)
	}

	// ... during a stat: exit 8, the snapshots received and the last one's.
	pid = startAnother(t)
	err, out, _ = exitDuring(t, pid, "COUNT", "stat", "-p", strconv.Itoa(pid), "e2e:::tick", "-i", "100ms")
	if exitCode(err) != exitExited || !strings.Contains(err.Error(), "process exited during the stat") ||
		!strings.Contains(err.Error(), fmt.Sprintf("%d snapshots received", strings.Count(out, "COUNT"))) {
		t.Errorf("stat of a process that exits: exit %d (%v)\n%s", exitCode(err), err, out)
	}
	pid = startAnother(t)
	err, out, _ = exitDuring(t, pid, `"stat"`, "stat", "-p", strconv.Itoa(pid), "e2e:::tick", "-i", "100ms", "--json")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Exited    bool
		Snapshots int
		Stat      *struct{ Rows []struct{ Count int64 } }
	}
	if exitCode(err) != exitExited || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || !last.Exited ||
		last.Snapshots != len(lines)-1 || last.Stat == nil || len(last.Stat.Rows) == 0 {
		t.Errorf("stat --json of a process that exits: exit %d (%v), last line %q", exitCode(err), err, lines[len(lines)-1])
	}
}

// TestExitPermission: another user's process is refused with exit 5, by pid and by
// name (the client runs as uid 65534: CI runs as root).
func TestExitPermission(t *testing.T) {
	testutil.NeedRoot(t)
	pid := startTarget(t)
	bin := sdtctlBinary(t)
	for _, args := range [][]string{
		{"list", "-p", strconv.Itoa(pid)},
		{"trace", "-p", strconv.Itoa(pid), "e2e:::tick"},
		{"stat", "-n", "target", "e2e:::tick"},
	} {
		if args[1] == "-n" && testutil.Emulated() {
			continue // under qemu the target's command line names the emulator, not target
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR=", "SDT_CONTROL=off")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitPermission || !strings.Contains(string(out), "uid") {
			t.Errorf("sdtctl %v as uid 65534: %v, want exit %d naming the owner:\n%s", args, err, exitPermission, out)
		}
	}
}

// TestFoldString: --value and --hist fold numbers; on a string argument they are
// refused, naming the argument and its type, and len(ARG) folds its length.
func TestFoldString(t *testing.T) {
	p := strconv.Itoa(startTarget(t))
	for _, args := range [][]string{
		{"--hist", "name"},
		{"--value", "name"},
		{"--hist", "arg1"},
		{"--value", "arg1", "--by", "name"},
	} {
		_, err := sdtctl(t, append([]string{"stat", "-p", p, "e2e:::tick", "-d", "300ms"}, args...)...)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "argument name of e2e:main:main.step:tick is a string") ||
			!strings.Contains(err.Error(), "len(") {
			t.Errorf("stat %v on a string: %v, want a refusal naming the argument, its type, and len()", args, err)
		}
	}
	out, err := sdtctl(t, "stat", "-p", p, "e2e:::tick", "-d", "300ms", "--hist", "len(name)", "--json")
	var snap struct {
		Stat struct {
			Value string
			Rows  []struct{ Count, Min, Max int64 }
		}
	}
	if first, _, _ := strings.Cut(out, "\n"); err != nil || json.Unmarshal([]byte(first), &snap) != nil || snap.Stat.Value != "len(name)" ||
		len(snap.Stat.Rows) != 1 || snap.Stat.Rows[0].Min != int64(len("beta")) || snap.Stat.Rows[0].Max != int64(len("alpha")) {
		t.Errorf("stat --hist len(name): %v %+v\n%s", err, snap, out)
	}
	if _, err := sdtctl(t, "stat", "-p", p, "e2e:::tick", "-d", "300ms", "--hist", "len(i)"); exitCode(err) != exitUsage ||
		!strings.Contains(err.Error(), "argument i of e2e:main:main.step:tick is of type int, not a string") {
		t.Errorf("stat --hist len(i): %v, want a refusal: i is an int", err)
	}
}

// TestDemoShortPhase: demo -t 300ms measures each phase's throughput (it printed 0
// calls/s), and refuses a phase below its least.
func TestDemoShortPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo's workload on every CPU for seconds")
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, sdtctlBinary(t), "demo", "-t", "300ms", "-rounds", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("demo -t 300ms: %v\n%s", err, out)
	}
	_, table, ok := strings.Cut(string(out), "workload throughput")
	row := regexp.MustCompile(`^  (probes disabled|enabled, no consumer|enabled, aggregation|disabled again)\s+(\S+)\s+\(median of (\d+);`)
	rates := 0
	for _, line := range strings.Split(table, "\n")[1:] {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if r, err := strconv.ParseFloat(m[2], 64); err != nil || r <= 0 || m[3] != "2" {
			t.Errorf("demo -t 300ms -rounds 2: %q: want a rate above 0, the median of 2 phases", line)
		}
		rates++
	}
	if !ok || rates != 4 {
		t.Errorf("demo -t 300ms: %d rates, want 4:\n%s", rates, out)
	}
}
