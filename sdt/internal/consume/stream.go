package consume

import (
	"errors"
	"time"

	"github.com/gosdt/gosdt/internal/alarm"
	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// pollBusy is how long a trace stream waits after a batch that emptied the buffers:
// long enough to send a thousand events at a million a second in one frame, short
// against what a buffer holds (DefaultBufSize: 65,000 records of two arguments).
const pollBusy = time.Millisecond

// Client is the connection a stream is sent on: package ctlserver's, which reads
// the client's requests and passes those a stream takes (stop) on reqs.
type Client interface {
	Name() string
	Send(r *ctlproto.Response) error
	SendShared(r *ctlproto.Response, fds []int, writable int) error
	Fail(err error) error
}

// Stream runs a trace or a stat until its count or duration is reached, the client
// sends stop, or the connection ends (closed true). The end is sent only after the
// stream's holds are released, so that a client that has read it sees its probes off.
func Stream(cc Client, q *ctlproto.Request, reqs <-chan *ctlproto.Request) (closed bool, err error) {
	var end *ctlproto.Response
	if q.Op == ctlproto.OpStat {
		end, closed, err = statStream(cc, q, reqs)
	} else {
		end, closed, err = traceStream(cc, q, reqs)
	}
	if end != nil {
		err = cc.Send(end)
	}
	return closed, err
}

// streamEnd is what ends a stream besides its own work: its duration, or a request
// (stop, or the connection's end).
type streamEnd struct {
	deadline <-chan struct{}
	timer    *alarm.Alarm
}

func newStreamEnd(q *ctlproto.Request) *streamEnd {
	e := &streamEnd{}
	if q.DurationMS > 0 {
		e.timer = alarm.After(time.Duration(q.DurationMS) * time.Millisecond)
		e.deadline = e.timer.C
	}
	return e
}

func (e *streamEnd) stop() {
	if e.timer != nil {
		e.timer.Stop()
	}
}

// A wake is what ended a stream's wait (streamEnd.wait).
type wake int

const (
	wakeTick     wake = iota // the stream's own tick
	wakeRequest              // a request that changes nothing (refused)
	wakeDeadline             // the stream's duration ran out
	wakeStop                 // a stop request
	wakeClosed               // the connection ended
)

// wait waits for tick, the stream's duration or a request of the connection, and
// answers a request: every stream's loop waits on the same three.
func (e *streamEnd) wait(cc Client, q *ctlproto.Request, tick <-chan struct{}, reqs <-chan *ctlproto.Request) wake {
	select {
	case <-tick:
		return wakeTick
	case <-e.deadline:
		return wakeDeadline
	case r, ok := <-reqs:
		switch stop, closed := request(cc, q, r, ok); {
		case closed:
			return wakeClosed
		case stop:
			return wakeStop
		}
		return wakeRequest
	}
}

// request handles a request that came during a stream: true when it ends the stream
// (stop), closed when the connection has ended.
func request(cc Client, q *ctlproto.Request, r *ctlproto.Request, ok bool) (stop, closed bool) {
	if !ok {
		return true, true
	}
	if r.Op != ctlproto.OpStop {
		cc.Fail(ctlproto.Errorf(ctlproto.CodeBadRequest, "%s during %s: send stop first", r.Op, q.Op))
		return false, false
	}
	return true, false
}

// traceStream sends a trace's records as they arrive. At its end (stop, duration)
// it switches its probes off, sends what they fired before, and ends with what was
// sent and what was dropped; at its count it ends at once: what fired after the
// last event counted is neither sent nor counted dropped.
func traceStream(cc Client, q *ctlproto.Request, reqs <-chan *ctlproto.Request) (end *ctlproto.Response, closed bool, err error) {
	tr, _, err := adopt(q) // opened at start for this request (follow.go), or refused then
	if err != nil {
		return nil, false, ErrCode(err)
	}
	if tr == nil {
		if tr, err = openTrace(cc.Name()+" trace", q.Spec, traceOptions(q)); err != nil {
			return nil, false, ErrCode(err)
		}
	}
	defer tr.Close()
	defer releaseAdopted()
	clock := nowClock()
	started := &ctlproto.Response{Kind: ctlproto.KindStarted, Buffers: len(tr.s.buffers()), BufSize: tr.s.size, Clock: &clock}
	w := newBatcher(tr)
	fds, writable := w.share()
	started.Live = q.Live && writable >= 0
	if err := cc.SendShared(started, fds, writable); err != nil {
		return nil, true, nil
	}
	// sdtctl has the buffers: a command that waits for it (WaitAdopted) may run, and
	// end, at once
	if w.shared = started.Shared > 0; w.shared {
		w.passed = started.Shared - 1
		if started.Live {
			w.passed--
		}
	}
	if started.Live {
		tr.s.heads.seal() // sdtctl's alone to move
		releaseAdopted()
		return liveStream(cc, q, tr, w, reqs)
	}
	releaseAdopted()
	ends := newStreamEnd(q)
	defer ends.stop()
	poll := alarm.After(time.Hour)
	defer poll.Stop()

	sent := 0
	// endNow is the end: at the count, the drops that came before the events read
	// (per buffer: drops after a buffer's last event read came after the count's
	// last); at a stop or the duration, every drop.
	endNow := func(atCount bool) *ctlproto.Response {
		r := &ctlproto.Response{Kind: ctlproto.KindEnd, Delivered: uint64(sent), Filtered: tr.s.filtered()}
		if atCount {
			r.BufferDrops, r.Drops = tr.s.readDrops()
			r.BufferDrops = append(r.BufferDrops, 0)
		} else {
			r.BufferDrops, r.Drops = tr.s.drops()
			r.BufferDrops = append(r.BufferDrops, tr.s.lost.Load().Load())
		}
		return r
	}
	// pump sends what has arrived, up to the count; done when that is reached.
	pump := func() (n int, done bool, err error) {
		limit := int(^uint(0) >> 1)
		if q.Count > 0 {
			limit = q.Count - sent
		}
		batch, n := w.next(limit)
		if batch == nil {
			w.commit()
			return 0, false, nil
		}
		if err := w.send(cc, batch); err != nil {
			return 0, false, err
		}
		w.commit() // in the socket: it outlives the process
		sent += n
		return n, q.Count > 0 && sent >= q.Count, nil
	}
	finish := func() (*ctlproto.Response, bool, error) {
		tr.c.release()
		tr.c.flush() // the returns of calls made before the stop, which wait in rings
		for {
			n, done, err := pump()
			if err != nil {
				return nil, true, nil
			}
			if n == 0 || done {
				return endNow(done), false, nil
			}
		}
	}
	for idle := 0; ; {
		n, done, err := pump()
		switch {
		case err != nil:
			return nil, true, nil
		case done:
			return endNow(true), false, nil
		case n > 0:
			idle = 0
		default:
			idle++
		}
		switch {
		case w.full:
			poll.Reset(0) // more is waiting: look again at once
		case idle == 0:
			poll.Reset(pollBusy)
		default:
			poll.Reset(backoff(idle))
		}
		switch ends.wait(cc, q, poll.C, reqs) {
		case wakeDeadline, wakeStop:
			return finish()
		case wakeClosed:
			return nil, true, nil
		}
	}
}

// livePoll is how often a live trace's stream looks for new Ps (their buffers
// are passed), probes whose first fire told their kinds (the description log), and
// the clock (sent each second).
const livePoll = 10 * time.Millisecond

// liveStream runs a trace that sdtctl reads live (Request.Live): the process
// copies nothing; it passes the buffers of Ps added since, the kinds fires told,
// the clock, and at the end (a stop, the duration; sdtctl stops at its count) the
// drops, once no fire can write any more.
func liveStream(cc Client, q *ctlproto.Request, tr *Trace, w *batcher, reqs <-chan *ctlproto.Request) (end *ctlproto.Response, closed bool, err error) {
	ends := newStreamEnd(q)
	defer ends.stop()
	tick := alarm.Every(livePoll)
	defer tick.Stop()
	s := tr.s
	update := func() {
		if st := s.probes.Load(); st != nil {
			s.log.update(*st)
		}
	}
	clocked := time.Now()
	finish := func() (*ctlproto.Response, bool, error) {
		tr.c.release()
		tr.c.flush() // the returns of calls made before the stop, which wait in rings
		update()
		s.stopFires() // every fire is in the buffers, or counted: sdtctl reads to their tails
		r := &ctlproto.Response{Kind: ctlproto.KindEnd, Filtered: s.filtered()}
		r.BufferDrops, r.Drops = s.drops()
		r.BufferDrops = append(r.BufferDrops, s.lost.Load().Load())
		return r, false, nil
	}
	for {
		switch ends.wait(cc, q, tick.C, reqs) {
		case wakeTick:
			s.grow()
			update()
			if len(s.buffers()) > w.passed || time.Since(clocked) > time.Second {
				clocked = time.Now()
				clock := nowClock()
				if err := w.send(cc, &ctlproto.Response{Kind: ctlproto.KindEvents, Clock: &clock}); err != nil {
					return nil, true, nil
				}
			}
		case wakeDeadline, wakeStop:
			return finish()
		case wakeClosed:
			return nil, true, nil
		}
	}
}

// statStream sends an aggregation's snapshot every interval, and at its end.
func statStream(cc Client, q *ctlproto.Request, reqs <-chan *ctlproto.Request) (end *ctlproto.Response, closed bool, err error) {
	_, ag, err := adopt(q) // opened at start for this request (follow.go)
	if err != nil {
		return nil, false, ErrCode(err)
	}
	if ag == nil {
		if ag, err = openAggregation(cc.Name()+" stat", q.Spec, aggOptions(q)); err != nil {
			return nil, false, ErrCode(err)
		}
	}
	defer ag.Close()
	defer releaseAdopted()
	if err := cc.Send(&ctlproto.Response{Kind: ctlproto.KindStarted}); err != nil {
		return nil, true, nil
	}
	releaseAdopted()
	ends := newStreamEnd(q)
	defer ends.stop()
	iv := time.Second
	if q.IntervalMS > 0 {
		iv = time.Duration(q.IntervalMS) * time.Millisecond
	}
	tick := alarm.Every(iv)
	defer tick.Stop()
	lastStat := time.Now()
	statNow := func() error {
		lastStat = time.Now()
		snap := ag.Snapshot
		if q.Clear {
			snap = ag.Interval
		}
		st := toStat(snap())
		st.Interval = q.Clear
		return cc.Send(fitStat(st))
	}
	end = &ctlproto.Response{Kind: ctlproto.KindEnd}
	for {
		switch ends.wait(cc, q, tick.C, reqs) {
		case wakeTick:
			if err := statNow(); err != nil {
				return nil, true, nil
			}
		case wakeDeadline:
			if time.Since(lastStat) > 100*time.Millisecond {
				statNow()
			}
			return end, false, nil
		case wakeStop:
			statNow()
			return end, false, nil
		case wakeClosed:
			return nil, true, nil
		}
	}
}

// ErrCode maps an error to a protocol error.
func ErrCode(err error) error {
	if _, ok := errors.AsType[*ctlproto.Error](err); ok {
		return err
	}
	if we, ok := errors.AsType[*PredicateError](err); ok {
		return ctlproto.Errorf(ctlproto.CodeBadRequest, "%s", whereMessage(we))
	}
	if _, ok := errors.AsType[*optionError](err); ok {
		return ctlproto.Errorf(ctlproto.CodeBadRequest, "%v", err)
	}
	switch {
	case errors.Is(err, registry.ErrMalformedSpec):
		return ctlproto.Errorf(ctlproto.CodeBadSpec, "%v", err)
	case errors.Is(err, registry.ErrNoMatch):
		return ctlproto.Errorf(ctlproto.CodeNoMatch, "%v", err)
	case errors.Is(err, registry.ErrNotSupported):
		return ctlproto.Errorf(ctlproto.CodeNotSupported, "%v", err)
	case errors.Is(err, ErrBudget):
		return ctlproto.Errorf(ctlproto.CodeBudget, "%v", err)
	}
	return ctlproto.Errorf(ctlproto.CodeInternal, "%v", err)
}
