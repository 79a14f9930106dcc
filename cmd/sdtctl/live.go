package main

import (
	"bufio"
	"sync"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// A live trace (ctlproto's live.go): sdtctl reads the process's rings while it
// writes them and moves their heads; the process copies no record and sends only
// new buffers, its clock and its end. sdtctl counts -c itself.

// liveRead is the reading of one process's rings.
type liveRead struct {
	done    chan struct{} // closed: the stream has ended
	stopped chan struct{} // closed by the reader as it returns
	bad     uint64        // records that could not be decoded: counted dropped
	raw     *rawOut       // --raw: the rings' bytes are written as they are
}

// rawOut writes a raw trace (ctlproto's raw.go): the rings' bytes as they are, and
// the frames that say how to read them. The caller holds the trace's lock.
type rawOut struct {
	w   *bufio.Writer
	buf []byte
}

func newRawOut(w *bufio.Writer) *rawOut {
	w.WriteString(ctlproto.RawMagic)
	return &rawOut{w: w}
}

// frame writes r, said of pid.
func (o *rawOut) frame(pid int, r *ctlproto.Response) {
	b, err := ctlproto.AppendFrame(o.buf[:0], r)
	if err != nil {
		return // cannot be: frames of descriptions the process sent in frames
	}
	o.buf = b
	o.w.Write(ctlproto.AppendRawHead(nil, ctlproto.RawFrame, uint32(pid), len(b)))
	o.w.Write(b)
	o.w.Write(ctlproto.RawPad(len(b)))
}

// records writes a ring's bytes (a, then b where they wrap), as it holds them.
func (o *rawOut) records(pid int, a, b []byte) {
	for _, p := range [][]byte{a, b} {
		if len(p) > 0 {
			o.w.Write(ctlproto.AppendRawHead(nil, ctlproto.RawRecords, uint32(pid), len(p)))
			o.w.Write(p) // records are 8-byte multiples: no pad
		}
	}
}

// liveChunk is the most bytes of one ring read in one pass, so that the processes
// of a trace take turns at the output.
const liveChunk = 1 << 20

// startLive starts reading the rings the start passed.
func (t *traceRun) startLive(mu *sync.Mutex, out *bufio.Writer, raw *rawOut, more func() bool, took func()) {
	lr := &liveRead{done: make(chan struct{}), stopped: make(chan struct{}), raw: raw}
	t.live = lr
	mu.Lock()
	if raw != nil {
		pid := t.cl.pid
		raw.frame(pid, &ctlproto.Response{Kind: ctlproto.KindStarted, Pid: pid, Clock: t.cl.started.Clock})
		t.rs.onDescs = func(ds []ctlproto.Desc) {
			raw.frame(pid, &ctlproto.Response{Kind: ctlproto.KindEvents, Pid: pid, Descs: ds})
		}
		t.rs.onBytes = func(_ int, a, b []byte) { raw.records(pid, a, b) }
	}
	t.share(nil)
	t.er.Take(t.cl.started) // its clock
	mu.Unlock()
	go func() {
		defer close(lr.stopped)
		for idle := 0; ; idle++ {
			mu.Lock()
			n := t.readLive(false, more, took)
			if n > 0 {
				out.Flush()
			}
			mu.Unlock()
			if n > 0 {
				idle = 0
			}
			select {
			case <-lr.done:
				return
			default:
			}
			if n == 0 {
				time.Sleep(liveBackoff(idle))
			}
		}
	}()
}

// liveBackoff is how long the reader sleeps after a pass that found nothing: short
// at first, so that a burst is read promptly, then up to a millisecond (a 4 MiB
// ring holds some 50,000 records: 5 ms at 10M/s).
func liveBackoff(idle int) time.Duration {
	if idle < 100 {
		return 50 * time.Microsecond
	}
	return time.Millisecond
}

// endLive reads what is left once the stream has ended: everything the process
// wrote (its end comes once no fire can write; an exit leaves what it left), and
// sets the drops: at the count, those its records said came before; else all the
// rings counted, the fires on Ps without a buffer, the records an exit cut short
// and those that could not be decoded.
func (t *traceRun) endLive(mu *sync.Mutex, out *bufio.Writer, more func() bool, took func(), atCount bool) {
	lr := t.live
	close(lr.done)
	<-lr.stopped
	mu.Lock()
	defer mu.Unlock()
	t.share(nil)
	if t.bad == nil {
		for t.readLive(true, more, took) > 0 {
		}
	}
	out.Flush()
	atCount = atCount || !more()
	rs := &t.rs
	var per []uint64
	var all uint64
	if atCount {
		for _, m := range rs.met {
			per = append(per, m)
			all += m
		}
		per = append(per, 0)
	} else {
		per, all = rs.drops()
		lost := rs.lostWord()
		per = append(per, lost)
		all += lost + lr.bad
		if t.end == nil {
			all += rs.cut()
		}
	}
	t.drops = all
	if t.end != nil {
		t.end.Drops, t.end.BufferDrops, t.end.Delivered = all, per, uint64(t.n)
	}
	if lr.raw != nil {
		end := &ctlproto.Response{Kind: ctlproto.KindEnd, Pid: t.cl.pid, Drops: all, BufferDrops: per, Delivered: uint64(t.n)}
		if t.end != nil {
			end.Filtered = t.end.Filtered
		} else {
			end.Code = "exited"
		}
		lr.raw.frame(t.cl.pid, end)
		out.Flush()
	}
}

// readLive prints the records written since the last pass, while more says; final:
// the process writes no more (a record whose kinds are still pending is counted, not
// waited for). It returns how many it printed.
func (t *traceRun) readLive(final bool, more func() bool, took func()) int {
	if t.bad != nil {
		return 0
	}
	rs := &t.rs
	rs.describeMore(&t.er)
	printed := 0
	_, _, bad := rs.readLive(liveChunk, func(i int, rec ctlproto.Record) bool {
		if !more() {
			return false
		}
		if t.er.Desc(rec) == nil { // (Desc: the last one, most often, no lookup)
			rs.describeMore(&t.er)
			if t.er.Desc(rec) == nil {
				// a site bound after its probe was logged: named as the probe
				ds, ok := rs.probes[rec.Probe()]
				if !ok {
					t.live.bad++
					return true
				}
				ds.Site = rec.Site()
				t.er.Take(&ctlproto.Response{Descs: []ctlproto.Desc{ds}})
				if rs.onDescs != nil {
					rs.onDescs([]ctlproto.Desc{ds})
				}
			}
		}
		if t.live.raw != nil {
			// written as the ring holds it (onBytes): only its kinds are waited for
			if ds := t.er.Desc(rec); ds.Pending {
				if !final {
					rs.describeMore(&t.er)
					return false
				}
				t.live.bad++
				return true
			}
			t.n++
			printed++
			took()
			return true
		}
		wait := false
		err := t.er.Each(rec, func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool {
			if ds.Pending {
				if !final {
					rs.describeMore(&t.er)
					wait = true
					return false
				}
				t.live.bad++ // its kinds never came: it cannot be read
				return true
			}
			t.p.print(rec, ds, l, t.er.Clock())
			t.n++
			printed++
			took()
			return true
		})
		if err != nil {
			t.live.bad++
		}
		return !wait
	})
	t.live.bad += bad
	return printed
}
