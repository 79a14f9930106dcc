//go:build unix

package main

import (
	"os"
	"syscall"
)

// forwarded are the signals sdtctl passes on to a command it started; terminate is
// what ends a command the trace ended before.
var (
	forwarded = []os.Signal{os.Interrupt, syscall.SIGTERM}
	terminate = os.Signal(syscall.SIGTERM)
	stopOn    = []os.Signal{os.Interrupt, syscall.SIGTERM}
)
