//go:build !linux

package otelcoltest

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
