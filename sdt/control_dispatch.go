package sdt

import (
	"math/bits"
	"sync"
	"time"
)

// The dispatcher reads the process's ring and hands each event to the traces whose
// bits it carries. It runs while at least one trace does; a trace whose channel is
// full loses the event (counted).
var disp struct {
	mu      sync.Mutex
	outs    [64]*traceOut
	running bool
}

// traceOut is one trace's channel. A subscription bit is reused once its trace ends,
// and the ring may still hold events marked with it: a trace takes only events of its
// own probes (ids) fired since it began.
type traceOut struct {
	ch    chan event
	ids   map[uint32]bool
	since int64
	lost  sync.Mutex
	n     uint64
}

func dispatchTo(bit uint64, ids map[uint32]bool, since int64) (chan event, func() uint64) {
	o := &traceOut{ch: make(chan event, 1024), ids: ids, since: since}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	disp.outs[bitIndex(bit)] = o
	if !disp.running {
		disp.running = true
		go dispatch()
	}
	return o.ch, func() uint64 { o.lost.Lock(); defer o.lost.Unlock(); return o.n }
}

func undispatch(bit uint64) {
	disp.mu.Lock()
	defer disp.mu.Unlock()
	disp.outs[bitIndex(bit)] = nil
}

func bitIndex(bit uint64) int { return bits.TrailingZeros64(bit) }

func dispatch() {
	r := procRing.Load()
	var e event
	idle := 0
	for {
		if !r.get(&e) {
			disp.mu.Lock()
			any := false
			for _, o := range disp.outs {
				any = any || o != nil
			}
			if !any {
				disp.running = false
				disp.mu.Unlock()
				return
			}
			disp.mu.Unlock()
			if idle++; idle > 100 {
				time.Sleep(time.Millisecond)
			} else {
				time.Sleep(50 * time.Microsecond)
			}
			continue
		}
		idle = 0
		disp.mu.Lock()
		for m := e.Subs; m != 0; m &= m - 1 {
			o := disp.outs[bitIndex(m&-m)]
			if o == nil || !o.ids[e.Probe] || e.Time < o.since {
				continue
			}
			select {
			case o.ch <- e:
			default:
				o.lost.Lock()
				o.n++
				o.lost.Unlock()
			}
		}
		disp.mu.Unlock()
	}
}
