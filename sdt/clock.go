package sdt

import _ "unsafe" // go:linkname

// nanotime is the runtime's monotonic clock (vDSO, no allocation): what latency
// probes time with.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
