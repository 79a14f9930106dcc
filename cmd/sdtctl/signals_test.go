//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// sdtctlCmd starts the sdtctl binary with args, its output in a file (which a
// detached command may keep open: no pipe to wait for).
func sdtctlCmd(t *testing.T, args ...string) (*exec.Cmd, *output) {
	t.Helper()
	if testutil.Emulated() {
		t.Skip("sdtctl -- CMD under qemu-user: the command cannot be exec'd without binfmt_misc")
	}
	c := exec.Command(testbin.Sdtctl(t), args...)
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	out := &output{f.Name()}
	c.Stdout, c.Stderr = f, f
	c.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c, out
}

type output struct{ path string }

func (o *output) String() string {
	b, _ := os.ReadFile(o.path)
	return string(b)
}

// childOf is the pid of a child of pid, or 0.
func childOf(pid int) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			return n
		}
	}
	return 0
}

// waitExit waits for c up to limit and returns its exit code.
func waitExit(t *testing.T, c *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan struct{})
	var st *os.ProcessState
	go func() { st, _ = c.Process.Wait(); close(done) }()
	select {
	case <-done:
		return st.ExitCode()
	case <-time.After(limit):
		t.Fatalf("sdtctl still running %v after", limit)
		return -1
	}
}

// TestSignalPassedOnToCommand: SIGINT and SIGTERM sent to sdtctl alone reach the
// command it started; sdtctl says how it ended and exits, leaving nothing behind.
func TestSignalPassedOnToCommand(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		c, out := sdtctlCmd(t, "trace", "boot:::", "--", "sleep", "100")
		var child int
		for deadline := time.Now().Add(10 * time.Second); child == 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			child = childOf(c.Process.Pid)
		}
		if child == 0 {
			t.Fatal("sdtctl started no command")
		}
		time.Sleep(100 * time.Millisecond) // the command exec'd
		c.Process.Signal(sig)
		code := waitExit(t, c, 20*time.Second)
		if syscall.Kill(child, 0) == nil && !gone(child) {
			t.Errorf("%v: the command (pid %d) was left running", sig, child)
			syscall.Kill(child, syscall.SIGKILL)
		}
		want := "killed by signal " + sig.String()
		if !strings.Contains(out.String(), want) || code != exitNotGosdt {
			t.Errorf("%v: exit %d, output %q: want %q, exit %d", sig, code, out.String(), want, exitNotGosdt)
		}
	}
}

// TestCommandEndedWithTrace: a trace that ends before its command (-d) ends the
// command (SIGTERM) and says so; --detach leaves it running.
func TestCommandEndedWithTrace(t *testing.T) {
	bin := buildTarget(t)
	c, out := sdtctlCmd(t, "stat", "e2e:::", "-d", "700ms", "--", bin)
	code := waitExit(t, c, 30*time.Second)
	if code != 0 || !strings.Contains(out.String(), "terminating it") || !strings.Contains(out.String(), "killed by signal terminated") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}

	c, out = sdtctlCmd(t, "stat", "e2e:::", "-d", "700ms", "--detach", "--", bin)
	var child int
	for deadline := time.Now().Add(10 * time.Second); child == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		child = childOf(c.Process.Pid)
	}
	code = waitExit(t, c, 30*time.Second)
	if child == 0 || code != 0 || !strings.Contains(out.String(), "left running (--detach)") || gone(child) {
		t.Errorf("--detach: child %d, exit %d:\n%s", child, code, out.String())
	}
	if child != 0 {
		syscall.Kill(child, syscall.SIGKILL)
	}
}

// TestCommandCannotStart: a command that cannot be started (missing, not executable)
// exits with its own code, not "no such process".
func TestCommandCannotStart(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	noexec := filepath.Join(t.TempDir(), "script")
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	for _, cmd := range []string{"/nonexistent-sdtctl-cmd", noexec, t.TempDir()} {
		var out, errb bytes.Buffer
		err := run([]string{"trace", "boot:::", "--", cmd}, &out, &errb)
		if exitCode(err) != exitStart || !strings.Contains(err.Error(), "cannot start") {
			t.Errorf("%s: %v (exit %d), want exit %d", cmd, err, exitCode(err), exitStart)
		}
	}
	var out, errb bytes.Buffer
	if err := run([]string{"trace", "boot:::", "-p", "999999999"}, &out, &errb); exitCode(err) != exitNoProcess {
		t.Errorf("no such process: %v (exit %d)", err, exitCode(err))
	}
	if err := run([]string{"trace", "boot:::", "--detach", "-p", "1"}, &out, &errb); exitCode(err) != exitUsage {
		t.Errorf("--detach without a command: %v", err)
	}
}
