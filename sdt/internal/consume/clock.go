package consume

import (
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Events are stamped in ticks of the CPU's counter (stamp): reading the counter alone
// costs a fraction of the runtime's clock, which also converts and reads the vDSO's
// data (bench/README.md has both costs). A tick's
// length is measured against the runtime's clock from a pair read when the control
// plane started to one read when the ticks are converted, so the longer a process
// runs, the closer it is.
var clockRef struct {
	ticks uint64
	mono  int64
}

// startClock takes the first pair (start, at sdt's init).
func startClock() { clockRef.ticks, clockRef.mono = clockPair() }

// clockPair reads the counter and the runtime's clock at one moment.
func clockPair() (ticks uint64, mono int64) {
	t0, _ := stamp()
	m := rt.Nanotime()
	t1, _ := stamp()
	return t0 + (t1-t0)/2, m
}

// nowClock is a stream's clock as of now: ticks to wall-clock time.
func nowClock() ctlproto.Clock {
	ticks, mono := clockPair()
	wall := time.Now().UnixNano()
	rate := 1.0
	if dt := ticks - clockRef.ticks; int64(dt) > 0 && mono > clockRef.mono {
		rate = float64(mono-clockRef.mono) / float64(dt)
	}
	return ctlproto.Clock{Ticks: ticks, Wall: wall, NsPerTick: rate}
}
