package control

import (
	"sync"
	"time"
	_ "unsafe" // go:linkname
)

// nanotime is the runtime's monotonic clock (vDSO, no allocation): what events are
// stamped with. time.Now reads the wall clock as well, which an event does not need.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// clockBase pairs a wall-clock time with the monotonic clock, to convert event
// times. Taken when first needed, not at init.
var clockBase struct {
	once sync.Once
	wall time.Time
	mono int64
}

// wallTime converts an event's monotonic time to wall-clock time.
func wallTime(mono int64) time.Time {
	clockBase.once.Do(func() { clockBase.wall, clockBase.mono = time.Now(), nanotime() })
	return clockBase.wall.Add(time.Duration(mono - clockBase.mono))
}
