//go:build unix

package otelcoltest

import (
	"os"
	"syscall"
)

// The signals that stop, pause and resume a collector.
var sigTerm, sigStop, sigCont os.Signal = syscall.SIGTERM, syscall.SIGSTOP, syscall.SIGCONT
