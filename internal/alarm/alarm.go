// Package alarm gives timers whose channel carries nothing: the channels of
// time.NewTimer and time.NewTicker carry a time.Time, which links its formatting.
//
// The runtime sends on a timer's channel through an interface, so a program that
// makes one links time.Time's methods, String and Format among them: about 45 KB of
// code and tables in every traced process, for timers whose time nobody reads.
// An Alarm rings through time.AfterFunc instead.
package alarm

import (
	"sync"
	"time"
)

// Alarm rings on C after a while, once or periodically. C holds at most one ring: a
// reader that is late sees one ring, not all it missed.
type Alarm struct {
	C <-chan struct{}

	c       chan struct{}
	t       *time.Timer
	every   time.Duration // 0: rings once
	mu      sync.Mutex    // orders a periodic ring's re-arming with Stop
	stopped bool
}

// After returns an alarm that rings once, after d.
func After(d time.Duration) *Alarm { return start(d, 0) }

// Every returns an alarm that rings every d (d > 0).
func Every(d time.Duration) *Alarm { return start(d, d) }

func start(d, every time.Duration) *Alarm {
	a := &Alarm{c: make(chan struct{}, 1), every: every}
	a.C = a.c
	// A short d may ring before AfterFunc returns: a periodic ring re-arms a.t under
	// mu, so a.t is set under it too.
	a.mu.Lock()
	a.t = time.AfterFunc(d, a.ring)
	a.mu.Unlock()
	return a
}

func (a *Alarm) ring() {
	a.signal()
	if a.every == 0 {
		return
	}
	a.mu.Lock()
	if !a.stopped {
		a.t.Reset(a.every)
	}
	a.mu.Unlock()
}

func (a *Alarm) signal() {
	select {
	case a.c <- struct{}{}:
	default: // a ring is waiting already
	}
}

// Reset makes a one-shot alarm ring once after d, and takes back a ring not read yet.
// A ring of the old alarm that was under way may still arrive once. With d <= 0 it
// rings at once, without a timer.
func (a *Alarm) Reset(d time.Duration) {
	a.t.Stop()
	select {
	case <-a.c:
	default:
	}
	if d <= 0 {
		a.signal()
		return
	}
	a.t.Reset(d)
}

// Stop stops the alarm: it rings no more (a ring under way may still arrive once).
func (a *Alarm) Stop() {
	a.mu.Lock()
	a.stopped = true
	a.t.Stop()
	a.mu.Unlock()
}
