// Package testutil holds the helpers tests use to skip when the machine lacks a
// capability (a tool, root, BPF), and to fail instead where CI says it must be there.
package testutil

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
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
