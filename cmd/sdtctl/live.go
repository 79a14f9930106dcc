package main

import (
	"bufio"
	"io"
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
	w      *bufio.Writer
	direct func(bufs [][]byte) error // where set: writes straight to the output file
	buf    []byte
	heads  [2][16]byte
	iov    [4][]byte
	err    error // the first write that failed: the trace ends with it
}

func newRawOut(w *bufio.Writer, out io.Writer) *rawOut {
	w.WriteString(ctlproto.RawMagic)
	return &rawOut{w: w, direct: directWriter(out)}
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
// Straight from the mapping where the output is a file (one writev, no copy in
// sdtctl): the caller moves the ring's head only once they are written.
func (o *rawOut) records(pid int, a, b []byte) {
	if o.err != nil {
		return
	}
	if o.direct == nil {
		for _, p := range [][]byte{a, b} {
			if len(p) > 0 {
				o.w.Write(ctlproto.AppendRawHead(nil, ctlproto.RawRecords, uint32(pid), len(p)))
				o.w.Write(p) // records are 8-byte multiples: no pad
			}
		}
		return
	}
	if err := o.w.Flush(); err != nil { // the frames before them
		o.err = err
		return
	}
	iov := o.iov[:0]
	for k, p := range [][]byte{a, b} {
		if len(p) > 0 {
			h := ctlproto.AppendRawHead(o.heads[k][:0], ctlproto.RawRecords, uint32(pid), len(p))
			iov = append(iov, h, p)
		}
	}
	if err := o.direct(iov); err != nil {
		o.err = err
	}
	clear(o.iov[:])
}

// liveChunk is the most bytes of one ring read in one pass, so that the processes
// of a trace take turns at the output.
const liveChunk = 1 << 20

// startLive starts reading the rings the start passed.
func (t *traceRun) startLive(mu *sync.Mutex, out *bufio.Writer, raw *rawOut, q *quota) {
	lr := &liveRead{done: make(chan struct{}), stopped: make(chan struct{}), raw: raw}
	t.live = lr
	mu.Lock()
	if raw != nil {
		pid := t.cl.pid
		st := t.cl.started // its clock, and the buffers' count and size
		raw.frame(pid, &ctlproto.Response{Kind: ctlproto.KindStarted, Pid: pid, Clock: st.Clock, Buffers: st.Buffers, BufSize: st.BufSize})
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
		var p pacer
		for {
			mu.Lock()
			before := t.rs.fill()
			n := t.readLive(false, q)
			if n > 0 {
				out.Flush()
			}
			after := t.rs.fill()
			mu.Unlock()
			select {
			case <-lr.done:
				return
			default:
			}
			if d := p.next(time.Now(), before, after); d > 0 {
				liveSleep(d)
			}
		}
	}()
}

// pacer decides how long the live reader sleeps between passes: long enough that a
// pass has a good batch to write (fewer, larger writes), short enough to come back
// well before a ring fills at the rate the rings are filling (the time the last
// sleep took, and what the rings held when it ended), since the process drops what
// a full ring cannot hold.
type pacer struct {
	last  time.Time // when the last pass ended
	left  float64   // the fullest ring's share unread then
	rate  float64   // share of a ring written per second, smoothed
	ready bool
}

const (
	paceTarget = 1.0 / 8 // the share of a ring a pass should find
	paceMin    = 100 * time.Microsecond
	paceMax    = time.Millisecond // idle: a burst at the fastest fire rate fills 4 MiB in a few ms
)

// next is the sleep after a pass that ended at now, finding the fullest ring before
// it at before and leaving it at after (shares of a ring).
func (p *pacer) next(now time.Time, before, after float64) time.Duration {
	if p.ready {
		if el := now.Sub(p.last).Seconds(); el > 0 {
			r := max(before-p.left, 0) / el
			p.rate = (p.rate + r) / 2 // a burst is met within a pass or two
			if r > p.rate {
				p.rate = r
			}
		}
	}
	p.last, p.left, p.ready = now, after, true
	if after >= paceTarget {
		// behind (a pass reads at most liveChunk of each ring): read again at once,
		// as a loaded machine may wake a sleeper far later than asked
		return 0
	}
	if p.rate <= 0 {
		return paceMax
	}
	d := time.Duration((paceTarget - after) / p.rate * float64(time.Second))
	return min(max(d, paceMin), paceMax)
}

// endLive reads what is left once the stream has ended: everything the process
// wrote (its end comes once no fire can write; an exit leaves what it left), and
// sets the drops: at the count, those its records said came before; else all the
// rings counted, the fires on Ps without a buffer, the records an exit cut short
// and those that could not be decoded.
func (t *traceRun) endLive(mu *sync.Mutex, out *bufio.Writer, q *quota) {
	lr := t.live
	close(lr.done)
	<-lr.stopped
	mu.Lock()
	defer mu.Unlock()
	t.share(nil)
	if t.bad == nil {
		for t.readLive(true, q) > 0 {
		}
	}
	out.Flush()
	atCount := !q.more() // (read under the lock: the reader counted until just now)
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

// readLive prints the records written since the last pass, while q says; final:
// the process writes no more (a record whose kinds are still pending is counted, not
// waited for). It returns how many it printed.
func (t *traceRun) readLive(final bool, q *quota) int {
	if t.bad != nil {
		return 0
	}
	rs := &t.rs
	rs.describeMore(&t.er)
	if t.live.raw != nil {
		return t.readRaw(final, q)
	}
	printed := 0
	_, _, bad := rs.readLive(liveChunk, func(i int, rec ctlproto.Record) bool {
		if !q.more() {
			return false
		}
		if !t.described(rec) {
			t.live.bad++
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
			q.took(1)
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

// readRaw is readLive of a raw trace: the rings' bytes are written as they are
// (rawOut.records), and of their records only those that begin a run of one probe
// and site are looked at, for their description.
func (t *traceRun) readRaw(final bool, q *quota) int {
	rs := &t.rs
	n, bad := rs.readSpans(liveChunk, q.left(), func(rec ctlproto.Record) int {
		if !t.described(rec) {
			t.live.bad++
			return ctlproto.ScanSkip
		}
		if t.er.Desc(rec).Pending { // only its kinds are waited for
			if !final {
				rs.describeMore(&t.er)
				return ctlproto.ScanStop
			}
			t.live.bad++
			return ctlproto.ScanSkip
		}
		return ctlproto.ScanTake
	})
	t.live.bad += bad
	t.n += int(n)
	q.took(int(n))
	return int(n)
}

// described reports whether rec's probe and site are described, telling er (and
// a raw trace's output) the probe's description for a site bound after its probe
// was logged.
func (t *traceRun) described(rec ctlproto.Record) bool {
	rs := &t.rs
	if t.er.Desc(rec) != nil { // (Desc: the last one, most often, no lookup)
		return true
	}
	rs.describeMore(&t.er)
	if t.er.Desc(rec) != nil {
		return true
	}
	// a site bound after its probe was logged: named as the probe
	ds, ok := rs.probes[rec.Probe()]
	if !ok {
		return false
	}
	ds.Site = rec.Site()
	t.er.Take(&ctlproto.Response{Descs: []ctlproto.Desc{ds}})
	if rs.onDescs != nil {
		rs.onDescs([]ctlproto.Desc{ds})
	}
	return true
}
