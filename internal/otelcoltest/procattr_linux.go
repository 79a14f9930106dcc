package otelcoltest

import "syscall"

// procAttr makes the collector die with the test that started it, also when the test
// binary crashes before its cleanups run.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
