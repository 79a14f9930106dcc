package consume

import (
	"math"
	"runtime"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// What streams send: a trace's records in batches (ctlproto's events), an
// aggregation's snapshots.

// maxBatchBytes bounds one events frame's records, far below ctlproto.MaxFrame (a
// record is at most about a kilobyte).
const maxBatchBytes = 256 << 10

// batcher copies a trace's records, as the buffers hold them, into events frames.
// It describes each probe site to the client once, in the batch that first names it.
type batcher struct {
	t      *Trace
	sent   map[ctlproto.DescKey]bool
	last   ctlproto.DescKey // described: most records repeat the previous one's
	kinds  []byte           // last's argument kinds, for the stacks' layout
	framed map[uint64]bool  // return addresses named (Frames) so far
	r      ctlproto.Response
	full   bool // the last batch stopped at maxBatchBytes: more may be waiting
	shared bool // the client maps the buffers: each new one is passed to it
	passed int  // buffers passed so far
}

// share is the descriptors of the buffers (after the description log and, live,
// the heads) not passed yet, and which of them goes read-write (the heads; -1:
// none); none unless every buffer so far and the log are shared memory.
func (w *batcher) share() (fds []int, writable int) {
	s := w.t.s
	bufs := s.buffers()
	writable = -1
	if w.passed == 0 {
		if s.log == nil {
			return nil, -1
		}
		fds = append(fds, s.log.fd)
		if s.heads != nil {
			writable = len(fds)
			fds = append(fds, s.heads.fd)
		}
	}
	for _, b := range bufs[w.passed:] {
		if b.fd < 0 {
			return nil, -1
		}
		fds = append(fds, b.fd)
	}
	return fds, writable
}

// send sends a batch, with the buffers added since the last passed along.
func (w *batcher) send(cc Client, r *ctlproto.Response) error {
	n := len(w.t.s.buffers())
	if !w.shared || n == w.passed {
		return cc.Send(r)
	}
	fds, writable := w.share()
	err := cc.SendShared(r, fds, writable)
	// passed, or not passable: either way not tried again (a buffer not passed, the
	// ones after it are not either, so that sdtctl's count of them stays true)
	w.passed = n
	w.shared = r.Shared > 0
	return err
}

// commit frees what the last batch read: once it is sent.
func (w *batcher) commit() {
	for _, b := range w.t.s.buffers() {
		b.commit()
	}
}

func newBatcher(t *Trace) *batcher {
	return &batcher{t: t, sent: map[ctlproto.DescKey]bool{}, framed: map[uint64]bool{}, last: ctlproto.DescKey{Probe: math.MaxUint32}}
}

// next takes up to limit records that have arrived into a batch, and says how many;
// the batch is nil when none has. It is valid until the next call.
func (w *batcher) next(limit int) (*ctlproto.Response, int) {
	r := &w.r
	*r = ctlproto.Response{Kind: ctlproto.KindEvents, Descs: r.Descs[:0], Records: r.Records[:0], Frames: r.Frames[:0]}
	w.full = false
	n := 0
	w.t.s.grow()
	bufs := w.t.s.buffers()
	for k := range bufs {
		bufs[(w.t.next+k)%len(bufs)].scan(func(rec ctlproto.Record) bool {
			if n >= limit || len(r.Records)+len(rec) > maxBatchBytes {
				w.full = w.full || n < limit
				return false
			}
			if k := (ctlproto.DescKey{Probe: rec.Probe(), Site: rec.Site()}); k != w.last {
				if !w.sent[k] {
					w.sent[k] = true
					r.Descs = append(r.Descs, w.describe(k))
				}
				w.last = k
				w.kinds = (*w.t.s.probes.Load())[k.Probe].kindsOf()
			}
			if w.t.s.stack > 0 {
				w.frames(rec)
			}
			r.Records = append(r.Records, rec...)
			n++
			return true
		})
	}
	w.t.next++
	if n == 0 && !(w.shared && len(bufs) > w.passed) {
		return nil, 0
	}
	for _, b := range bufs {
		r.Heads = append(r.Heads, b.next)
	}
	clock := nowClock()
	r.Clock = &clock
	_, r.Drops = w.t.s.readDrops()
	return r, n
}

// frames names the return addresses of rec's stack not named before.
func (w *batcher) frames(rec ctlproto.Record) {
	l, err := rec.Layout(w.kinds)
	if err != nil {
		return // cannot be: this process wrote it
	}
	for i := range l.Depth() {
		pc := l.PC(rec, i)
		if w.framed[pc] {
			continue
		}
		w.framed[pc] = true
		w.r.Frames = append(w.r.Frames, symbolize(pc))
	}
}

// symbolize names one return address of a stack runtime.Callers took: the function
// (inlined or not) and the line of the call.
func symbolize(pc uint64) ctlproto.Frame {
	f := ctlproto.Frame{PC: pc, Func: "?"}
	fr, _ := runtime.CallersFrames([]uintptr{uintptr(pc)}).Next()
	if fr.Function != "" {
		f.Func, f.File, f.Line = fr.Function, fr.File, fr.Line
	}
	return f
}

// describe names the records of probe k.Probe at site k.Site, and their arguments.
func (w *batcher) describe(k ctlproto.DescKey) ctlproto.Desc {
	ds := ctlproto.Desc{ID: k.Probe, Probe: w.t.c.name(k.Probe, uintptr(k.Site)), Site: k.Site}
	st := &(*w.t.s.probes.Load())[k.Probe]
	ds.Kinds = st.kindsOf()
	for i := range st.p.Args {
		ds.Args = append(ds.Args, ctlproto.Arg{Name: st.p.Args[i], Type: st.p.Types[i]})
	}
	return ds
}

// fitStat is a stat response whose frame fits in ctlproto.MaxFrame: the rows with
// the fewest fires that do not fit are left out and their fires counted in
// Overflow (a client says them not counted: too many keys).
func fitStat(st *ctlproto.Stat) *ctlproto.Response {
	r := &ctlproto.Response{Kind: ctlproto.KindStat, Stat: st}
	rows := st.Rows
	// The most rows that fit (rows are sorted, most fires first): all, most often.
	lo, hi := 0, len(rows)+1 // rows[:lo] fit, rows[:hi] do not
	for n := len(rows); hi-lo > 1; n = (lo + hi) / 2 {
		st.Rows = rows[:n]
		if _, err := ctlproto.AppendFrame(nil, r); err == nil {
			lo = n
		} else {
			hi = n
		}
	}
	for _, row := range rows[lo:] {
		st.Overflow += uint64(row.Count)
	}
	st.Rows = rows[:lo]
	return r
}

func toStat(s Snapshot) *ctlproto.Stat {
	st := &ctlproto.Stat{Time: time.Now().UnixNano(), By: s.By, Value: s.Value, Hist: s.Hist, Overflow: s.Overflow, Rows: []ctlproto.Row{}}
	if l := s.Linear; l != nil {
		st.Linear = &ctlproto.Linear{Low: l.Low, High: l.High, Step: l.Step}
	}
	for _, r := range s.Rows {
		row := ctlproto.Row{Key: r.Key, Count: r.Count, Sum: r.Sum, Min: r.Min, Max: r.Max, Avg: r.Avg}
		for _, b := range r.Hist {
			row.Hist = append(row.Hist, ctlproto.Bucket{Low: b.Low, Count: b.Count})
		}
		st.Rows = append(st.Rows, row)
	}
	return st
}
