//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testutil"
)

// buildStartup builds testdata/startup: a probe fired in a package's init, then N in
// main, then an exit with a given status.
func buildStartup(t *testing.T) string { return buildCommand(t, "startup") }

// buildCommand builds testdata/NAME, a program for sdtctl's -- CMD to start.
func buildCommand(t *testing.T, name string) string {
	t.Helper()
	if testutil.Emulated() {
		// sdtctl -- CMD starts the command itself, with a plain exec: under go test
		// -exec qemu-user (no binfmt_misc) the emulated sdtctl cannot start a binary of
		// its own architecture. The tests run natively on amd64.
		t.Skip("sdtctl -- CMD under qemu-user: the command cannot be exec'd without binfmt_misc")
	}
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/"+name).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// TestTraceCommand: sdtctl trace SPEC -- CMD sees the probe fired in a package's
// init, every fire of main, and reports the command's exit status; sdtctl itself
// exits 0.
func TestTraceCommand(t *testing.T) {
	bin := buildStartup(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	var out, errb bytes.Buffer
	err := run([]string{"trace", "boot:::", "--json", "--", bin, "50", "3"}, &out, &errb)
	if err != nil {
		t.Fatalf("trace: %v\n%s", err, errb.String())
	}
	var loaded, steps, status int
	status = -1
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			Event  *jsonEvent `json:"event"`
			Status *int       `json:"status"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case m.Status != nil:
			status = *m.Status
		case m.Event == nil:
		case strings.HasSuffix(m.Event.Probe, ":loaded"):
			if m.Event.Args[0].Value != "config" {
				t.Errorf("loaded: %+v", m.Event)
			}
			if steps > 0 {
				t.Errorf("the init's probe came after main's")
			}
			loaded++
		case strings.HasSuffix(m.Event.Probe, ":step"):
			if v, ok := m.Event.Args[0].Value.(float64); !ok || v != float64(steps) {
				t.Errorf("step %d: %+v", steps, m.Event)
			}
			steps++
		}
	}
	if loaded != 1 || steps != 50 || status != 3 {
		t.Fatalf("init's probe %d times (want 1), main's %d (want 50), status %d (want 3):\n%s", loaded, steps, status, out.String())
	}
}

// TestStatCommand: stat -- CMD folds from the first instruction and prints the last
// snapshot when the command ends.
func TestStatCommand(t *testing.T) {
	bin := buildStartup(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	var out, errb bytes.Buffer
	if err := run([]string{"stat", "boot:::", "--", bin, "1000", "0"}, &out, &errb); err != nil {
		t.Fatalf("stat: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "1000 ") || !strings.Contains(out.String(), "::loaded") ||
		!strings.Contains(errb.String(), "exited with status 0") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

// TestStatCommandEnds: aggregations live in the process, so a command's fires after
// stat's last snapshot end with it: stat says so on stderr, and a command that ended
// before the first snapshot, none of its fires shown, exits 8 saying none were
// counted; the command's own end is not taken for the stat's (no "terminating it").
func TestStatCommandEnds(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	last := buildLast(t)
	for _, end := range []string{"exit", "kill"} {
		var out, errb bytes.Buffer
		err := run([]string{"stat", "last:::word", "--", last, "1000", end}, &out, &errb)
		if exitCode(err) != exitExited || !strings.Contains(err.Error(), "ended before the stat's first snapshot") ||
			!strings.Contains(err.Error(), "none of its fires were counted") || strings.Contains(errb.String(), "terminating it") {
			t.Fatalf("%s: err %v (code %d)\nstdout:\n%s\nstderr:\n%s", end, err, exitCode(err), out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if err := run([]string{"stat", "boot:::step", "--", buildStartup(t), "1000", "0"}, &out, &errb); err != nil {
		t.Fatalf("stat: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "1000 ") || !strings.Contains(errb.String(), "after the last snapshot (shown): its fires in between, if any, are not counted") ||
		strings.Contains(errb.String(), "terminating it") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

// TestCommandBadWhere: a predicate no probe can take, of a command traced from its
// start, is refused with its caret (exit 2), not taken for a command that uses no
// gosdt nor left to trace nothing unsaid; one its probes take traces.
func TestCommandBadWhere(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	last := buildLast(t)
	for _, c := range []struct{ cmd, where, want string }{
		{"trace", "i >", "where: col 4: expected an argument"},
		{"stat", "(i > 1", "where: col 1: unbalanced ("},
		{"trace", `i == "x" && 1`, "not a condition"},
	} {
		var out, errb bytes.Buffer
		err := run([]string{c.cmd, "last:::word", "--where", c.where, "--", last, "10", "exit"}, &out, &errb)
		if exitCode(err) != exitUsage || !strings.Contains(errb.String()+err.Error(), c.want) || strings.Contains(errb.String(), "not a program that uses gosdt") {
			t.Fatalf("%s --where %q: err %v (code %d)\nstderr:\n%s", c.cmd, c.where, err, exitCode(err), errb.String())
		}
	}
	// An argument the probe, defined after sdtctl connected, lacks: it is left out,
	// and the command's stderr says so.
	cmdErr := filepath.Join(t.TempDir(), "stderr")
	var out, errb bytes.Buffer
	err := run([]string{"trace", "last:::word", "--where", "nosuch > 1", "--", "/bin/sh", "-c", `exec "$0" 10 exit 2>"$1"`, last, cmdErr}, &out, &errb)
	b, _ := os.ReadFile(cmdErr)
	if err != nil || !strings.Contains(string(b), `unknown argument "nosuch"`) || !strings.Contains(string(b), "not traced") {
		t.Fatalf("--where naming an argument the probe lacks: %v, unsaid:\n%s\n%s", err, b, errb.String())
	}
	out.Reset()
	errb.Reset()
	if err := run([]string{"trace", "last:::word", "--where", "i > 5", "--", last, "10", "exit"}, &out, &errb); err != nil {
		t.Fatalf("trace --where 'i > 5': %v\n%s", err, errb.String())
	}
	if n := strings.Count(out.String(), "last:main::word"); n != 4 {
		t.Fatalf("trace --where 'i > 5' of 10 fires: %d events, want 4\n%s", n, out.String())
	}
}

// TestCommandTraceRefusedAtStart: a trace the command cannot open at its start (here
// its memory budget, SDT_MEMORY, is smaller than the least buffers) is told to
// sdtctl, which exits with the reason; it ran the command untraced and reported 0
// events, as if nothing had fired.
func TestCommandTraceRefusedAtStart(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	last := buildLast(t)
	t.Setenv("SDT_MEMORY", "1k")
	for _, cmd := range []string{"trace"} {
		var out, errb bytes.Buffer
		err := run([]string{cmd, "last:::word", "--", last, "10", "exit"}, &out, &errb)
		if err == nil || !strings.Contains(errb.String()+err.Error(), "SDT_MEMORY") {
			t.Errorf("%s with SDT_MEMORY=1k: err %v (code %d), want the budget said\nstdout:\n%s\nstderr:\n%s", cmd, err, exitCode(err), out.String(), errb.String())
		}
	}
}

// TestCommandEndNotTheTrace: a command that ends on its own, even killed by a signal
// it sent itself, ended the trace, not the other way round: sdtctl never says it
// terminates it (the stream's end and the command's wait race; 20 rounds).
func TestCommandEndNotTheTrace(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	last := buildLast(t)
	for i := range 20 {
		end := []string{"kill", "exit"}[i%2]
		var out, errb bytes.Buffer
		err := run([]string{"trace", "last:::word", "--", last, "100", end}, &out, &errb)
		if err != nil || strings.Contains(errb.String(), "terminating it") || strings.Contains(errb.String(), "left running") {
			t.Fatalf("round %d (%s): %v\n%s", i, end, err, errb.String())
		}
	}
}

// TestCommandStaleSocket: the socket a killed process left under the pid the kernel
// gives the command again (pids wrap at pid_max) is not taken for the command's: sdtctl
// waits for the command to bind its own.
func TestCommandStaleSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pids read from /proc/sys/kernel/ns_last_pid")
	}
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	last := buildLast(t)
	dir := filepath.Join(xdg, "gosdt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		t.Skipf("the next pid: %v", err)
	}
	next, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for pid := next + 1; pid <= next+300; pid++ { // what the tools started meanwhile take too
		l, err := net.Listen("unix", filepath.Join(dir, strconv.Itoa(pid)+".sock"))
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close() // the file stays, as a killed process's does
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(filepath.Join(dir, strconv.Itoa(pid)+".sock"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if err := run([]string{"trace", "last:::word", "--", last, "10", "exit"}, &out, &errb); err != nil {
		t.Fatalf("trace -- CMD with stale sockets about: %v\n%s", err, errb.String())
	}
	if n := strings.Count(out.String(), "last:main::word"); n != 10 {
		t.Fatalf("%d events, want 10\n%s", n, out.String())
	}
}

// TestCommandNotGosdt: a command that uses no gosdt is said so, with its status.
func TestCommandNotGosdt(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	var out, errb bytes.Buffer
	err := run([]string{"trace", "boot:::", "--", "/bin/sh", "-c", "exit 2"}, &out, &errb)
	if exitCode(err) != exitNotGosdt || !strings.Contains(errb.String(), "exited with status 2") {
		t.Fatalf("err %v (code %d), stderr %s", err, exitCode(err), errb.String())
	}
	if _, err := os.Stat("/nonexistent-sdtctl-cmd"); err == nil {
		t.Skip()
	}
	if err := run([]string{"trace", "boot:::", "--", "/nonexistent-sdtctl-cmd"}, &out, &errb); exitCode(err) != exitStart {
		t.Fatalf("a missing command: %v", err)
	}
	if err := run([]string{"trace", "-p", "1", "boot:::", "--", "/bin/true"}, &out, &errb); exitCode(err) != exitUsage {
		t.Fatalf("-p with a command: %v", err)
	}
}
