//go:build unix

package sdt

import (
	"errors"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// startSignalToggle makes SDT_SIGNAL (default SIGUSR2) toggle every probe.
func startSignalToggle() {
	sig := syscall.SIGUSR2
	if v := os.Getenv("SDT_SIGNAL"); v != "" {
		s, ok := parseSignal(v)
		if !ok {
			warnf("SDT_SIGNAL=%q: not a signal; using SIGUSR2", v)
		} else {
			sig = s
		}
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

func parseSignal(v string) (syscall.Signal, bool) {
	if n, err := strconv.Atoi(v); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), true
	}
	name := strings.ToUpper(v)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	s := unix.SignalNum(name)
	return s, s != 0
}
