//go:build !unix

package main

import "os"

// forwarded are the signals sdtctl passes on to a command it started; terminate is
// what ends a command the trace ended before (os.Kill where there is no SIGTERM).
var (
	forwarded = []os.Signal{os.Interrupt}
	terminate = os.Kill
	stopOn    = []os.Signal{os.Interrupt}
)
