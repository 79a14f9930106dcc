package sdt

import (
	"time"
	_ "unsafe" // go:linkname
)

// nanotime is the runtime's monotonic clock (vDSO, no allocation): what events are
// stamped with. time.Now reads the wall clock as well, which an event does not need.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// clockBase pairs a wall-clock time with the monotonic clock, to convert event times.
var clockBase = struct {
	wall time.Time
	mono int64
}{time.Now(), nanotime()}

// eventTime converts an event's monotonic time to wall-clock time.
func eventTime(mono int64) time.Time {
	return clockBase.wall.Add(time.Duration(mono - clockBase.mono))
}
