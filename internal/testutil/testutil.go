// Package testutil holds the helpers tests use to skip when the machine lacks a
// capability (a tool, root, BPF), and to fail instead where CI says it must be there.
package testutil

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Required reports whether SDT_REQUIRE (a comma-separated list, or "all") names what.
// CI sets it for what it installs, so that a skip there would hide a broken test. No
// capability (what "") is never required: the skip is the platform's, not a missing
// install's.
func Required(what string) bool {
	if what == "" {
		return false
	}
	list := strings.Split(os.Getenv("SDT_REQUIRE"), ",")
	return slices.Contains(list, what) || slices.Contains(list, "all")
}

// Skip skips the test for the reason, or fails it when what is required.
func Skip(t testing.TB, what, reason string) {
	t.Helper()
	if Required(what) {
		t.Fatalf("%s is required here (SDT_REQUIRE) but: %s", what, reason)
	}
	t.Skipf("%s: %s", what, reason)
}

// NeedCommand returns the path of a command the test needs, or skips.
func NeedCommand(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(t, name, "not installed: "+err.Error())
	}
	return p
}

// NeedRoot skips unless the test runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "root", "the test must run as root")
	}
}

// Output runs bin with env (nil: the test's own) and returns its combined output; see
// Command.
func Output(bin string, env []string, args ...string) ([]byte, error) {
	cmd := Command(bin, args...)
	cmd.Env = env
	return cmd.CombinedOutput()
}

// Command returns a command that runs bin, a program built for this test's GOARCH,
// through the user-mode emulator (qemu-<arch>-static) when the test itself runs under
// one (go test -exec qemu-aarch64-static): the go command's host architecture is then
// not the test's.
func Command(bin string, args ...string) *exec.Cmd {
	if emu := emulator(); emu != "" {
		return exec.Command(emu, append([]string{bin}, args...)...)
	}
	return exec.Command(bin, args...)
}

// Emulated reports whether this test runs under a user-mode emulator.
func Emulated() bool { return emulator() != "" }

// Emulator returns the emulator Command runs programs with, "" when none is needed.
func Emulator() string { return emulator() }

// HostArch returns the go command's own GOARCH (the test's when it cannot tell): what
// a program the go command itself runs, such as a -toolexec tool, must be built for.
func HostArch() string {
	if h := hostArch(); h != "" {
		return h
	}
	return runtime.GOARCH
}

var hostArch = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOHOSTARCH").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

var emulator = sync.OnceValue(func() string {
	host := hostArch()
	if host == "" || host == runtime.GOARCH {
		return ""
	}
	arch := runtime.GOARCH
	if arch == "arm64" {
		arch = "aarch64" // qemu's name for it
	}
	emu, err := exec.LookPath("qemu-" + arch + "-static")
	if err != nil {
		return ""
	}
	return emu
})

// Bpftrace runs bpftrace with args, each run at most timeout, until done accepts
// what it printed, three runs at most; it returns the last run's output and error.
// Each run's output is logged. A run on a loaded machine, while other bpftrace runs
// attach uprobes, has been seen to attach nothing (the traced program then says its
// probe was never enabled, and bpftrace exits 0): another run tells that apart from
// a probe bpftrace can never attach, which fails all three.
func Bpftrace(tb testing.TB, timeout time.Duration, done func(out []byte) bool, args ...string) ([]byte, error) {
	tb.Helper()
	bt := NeedCommand(tb, "bpftrace")
	var out []byte
	var err error
	for run := 1; run <= 3; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		out, err = exec.CommandContext(ctx, bt, args...).CombinedOutput()
		cancel()
		tb.Logf("bpftrace run %d of %q: %v\n%s", run, args, err, out)
		if done(out) {
			break
		}
	}
	return out, err
}
