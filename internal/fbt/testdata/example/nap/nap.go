// Package nap has a function whose latency is known: the fbt bpftrace test's.
package nap

import "time"

// Sleep sleeps ms milliseconds and returns ms.
func Sleep(ms int) int {
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return ms
}
