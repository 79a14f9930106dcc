// Package testutil holds the helpers tests use to skip when the machine lacks a
// capability (a tool, root, BPF), and to fail instead where CI says it must be there.
package testutil

import (
	"os"
	"os/exec"
	"slices"
	"strings"
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
