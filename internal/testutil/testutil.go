// Package testutil holds the helpers tests use to skip when the machine lacks a
// capability (a tool, root, BPF), and to fail instead where CI says it must be there.
package testutil

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Required reports whether SDT_REQUIRE (a comma-separated list, or "all") names what.
// CI sets it for what it installs, so that a skip there would hide a broken test.
func Required(what string) bool {
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

// Output runs bin with env (nil: the test's own) and returns its combined output.
// When the host cannot execute bin, it runs it through the user-mode emulator that the
// tests themselves run under (go test -exec qemu-aarch64-static): the go command a test
// runs builds for the GOARCH in its environment, which is then the emulated one.
func Output(bin string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.ENOEXEC) {
		arch := runtime.GOARCH
		if arch == "arm64" {
			arch = "aarch64" // qemu's name for it
		}
		if emu, lerr := exec.LookPath("qemu-" + arch + "-static"); lerr == nil {
			cmd = exec.Command(emu, append([]string{bin}, args...)...)
			cmd.Env = env
			return cmd.CombinedOutput()
		}
	}
	return out, err
}
