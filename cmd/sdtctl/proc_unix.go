//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// alive reports whether pid exists (EPERM: it does, but is not ours).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownerOf is the uid that owns pid (linux: /proc/PID).
func ownerOf(pid int) (int, bool) {
	fi, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), ok
}
