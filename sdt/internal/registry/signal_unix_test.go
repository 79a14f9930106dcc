//go:build unix

package registry

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestToggleSignal: SDT_SIGNAL takes a name or number, and refuses, with a warning
// that names it and keeps SIGUSR2, a signal that cannot be caught or that means
// something else (stopping the program above all: Ctrl-C must go on stopping it).
func TestToggleSignal(t *testing.T) {
	for _, tc := range []struct {
		v    string
		sig  syscall.Signal
		warn string // a part of the warning; "" for none
	}{
		{"", unix.SIGUSR2, ""},
		{"SIGUSR1", unix.SIGUSR1, ""},
		{"usr1", unix.SIGUSR1, ""},
		{strconv.Itoa(int(unix.SIGUSR1)), unix.SIGUSR1, ""},
		{"SIGALRM", unix.SIGALRM, ""},
		{"SIGKILL", unix.SIGUSR2, `SDT_SIGNAL="SIGKILL": SIGKILL cannot be caught; using SIGUSR2`},
		{strconv.Itoa(int(unix.SIGKILL)), unix.SIGUSR2, "SIGKILL cannot be caught"},
		{"STOP", unix.SIGUSR2, "SIGSTOP cannot be caught"},
		{"SIGINT", unix.SIGUSR2, `SDT_SIGNAL="SIGINT": SIGINT is how users stop a program`},
		{"SIGTERM", unix.SIGUSR2, "SIGTERM is how users stop"},
		{"SIGQUIT", unix.SIGUSR2, "SIGQUIT is how users stop"},
		{"SIGHUP", unix.SIGUSR2, "SIGHUP is how users stop"},
		{"SIGTSTP", unix.SIGUSR2, "job control"},
		{"SIGSEGV", unix.SIGUSR2, "fault"},
		{"SIGURG", unix.SIGUSR2, "Go runtime"},
		{"SIGCHLD", unix.SIGUSR2, "by the system"},
		{"SIGBOGUS", unix.SIGUSR2, `SDT_SIGNAL="SIGBOGUS": not a signal; using SIGUSR2`},
		{"0", unix.SIGUSR2, "not a signal"},
	} {
		sig, warn := toggleSignal(tc.v)
		if sig != tc.sig || (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
			t.Errorf("SDT_SIGNAL=%q: %v, %q; want %v and a warning with %q", tc.v, sig, warn, tc.sig, tc.warn)
		}
	}
}
