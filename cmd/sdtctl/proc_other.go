//go:build !unix

package main

import "time"

// No control servers run here (see sdt): every process is unreachable.
func alive(pid int) bool { return false }

func gone(pid int) bool { return true }

func age(pid int) (time.Duration, bool) { return 0, false }
