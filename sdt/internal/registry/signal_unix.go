//go:build unix

package registry

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// startSignalToggle makes SDT_SIGNAL (default SIGUSR2) toggle every probe.
func startSignalToggle() {
	sig, warning := toggleSignal(os.Getenv("SDT_SIGNAL"))
	if warning != "" {
		warnf("%s", warning)
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sig)
	go func() {
		on := false
		for range ch {
			on = !on
			// The signal is an owner of its own: toggling off releases only what the
			// signal switched on, not what the program or sdtctl holds.
			_, err := reg.setBy(signalOwner, "*", on)
			if err != nil && !errors.Is(err, ErrStillHeld) {
				warnf("%v: %v", sig, err)
			}
		}
	}()
}

// toggleSignal is the signal SDT_SIGNAL names, v (SIGUSR2 when empty), or SIGUSR2
// and a warning when v is not a signal or one that must not toggle probes.
func toggleSignal(v string) (syscall.Signal, string) {
	if v == "" {
		return syscall.SIGUSR2, ""
	}
	s, ok := parseSignal(v)
	if !ok {
		return syscall.SIGUSR2, fmt.Sprintf("SDT_SIGNAL=%q: not a signal; using SIGUSR2", v)
	}
	if why := notToggle(s); why != "" {
		return syscall.SIGUSR2, fmt.Sprintf("SDT_SIGNAL=%q: %s %s; using SIGUSR2", v, unix.SignalName(s), why)
	}
	return s, ""
}

// notToggle says why s cannot be the toggle signal, "" when it can: it cannot be
// caught; users send it to stop or suspend the program, which must keep doing so;
// it reports a fault; or the runtime or the system send it for their own ends, when
// nobody meant to toggle anything. What is left: SIGUSR1, SIGUSR2, the real-time
// signals and a few others nothing sends unasked (SIGALRM, SIGPWR, ...).
func notToggle(s syscall.Signal) string {
	switch s {
	case unix.SIGKILL, unix.SIGSTOP:
		return "cannot be caught"
	case unix.SIGINT, unix.SIGTERM, unix.SIGQUIT, unix.SIGHUP:
		return "is how users stop a program (it must go on stopping it)"
	case unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGCONT:
		return "is job control (suspending and resuming the program)"
	case unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT, unix.SIGSYS:
		return "reports a fault"
	case unix.SIGURG:
		return "is the Go runtime's own (it preempts goroutines with it)"
	case unix.SIGPROF, unix.SIGCHLD, unix.SIGPIPE, unix.SIGWINCH:
		return "is sent by the system on its own (profiling, a child's exit, a closed pipe, a resized terminal)"
	}
	return ""
}

func parseSignal(v string) (syscall.Signal, bool) {
	if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), true
	}
	// Signal names are ASCII: not strings.ToUpper, which links Unicode's case tables'
	// code into every traced program for this one call.
	b := []byte(v)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	name := string(b)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	s := unix.SignalNum(name)
	return s, s != 0
}
