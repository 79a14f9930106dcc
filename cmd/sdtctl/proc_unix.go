//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
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

// gone reports whether pid has ended: no such process, or (linux) a zombie whose
// parent has not waited for it yet.
func gone(pid int) bool {
	if !alive(pid) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The command (field 2) may hold spaces and parentheses: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	return i >= 0 && len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// age is how long pid has run (linux: /proc/PID/stat's start time against
// /proc/uptime, in the kernel's 10 ms ticks); false where it cannot be read.
func age(pid int) (time.Duration, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, false
	}
	// The command (field 2) may hold spaces and parentheses: fields count from the
	// last ')'. starttime is field 22, the 20th after it.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 20 {
		return 0, false
	}
	ticks, err1 := strconv.ParseUint(f[19], 10, 64)
	secs, err2 := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const hz = 100 // USER_HZ: what /proc counts in, whatever the kernel's own HZ
	return time.Duration(secs*float64(time.Second)) - time.Duration(ticks)*time.Second/hz, true
}
