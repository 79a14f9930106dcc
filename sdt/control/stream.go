package control

import (
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// stream runs a trace or a stat until its count or duration is reached, the client
// sends stop, or the connection ends (closed true). The end is sent only after the
// stream's holds are released, so that a client that has read it sees its probes off.
func (cc *conn) stream(q *ctlproto.Request, reqs <-chan *ctlproto.Request) (closed bool, err error) {
	end, closed, err := cc.runStream(q, reqs)
	if end != nil {
		err = cc.send(end)
	}
	return closed, err
}

// runStream is stream up to its end, which it returns to be sent.
func (cc *conn) runStream(q *ctlproto.Request, reqs <-chan *ctlproto.Request) (end *ctlproto.Response, closed bool, err error) {
	var tr *Trace
	var ag *Aggregation
	if q.Op == ctlproto.OpStat {
		o := AggOptions{By: q.By, Value: q.Hist, Hist: q.Hist != ""}
		if _, err := newAggregation(o); err != nil {
			return nil, false, ctlproto.Errorf(ctlproto.CodeBadRequest, "%v", err)
		}
		if ag, err = openAggregation(cc.name+" stat", q.Spec, o); err != nil {
			return nil, false, errCode(err)
		}
		defer ag.Close()
	} else {
		if tr, err = openTrace(cc.name+" trace", q.Spec); err != nil {
			return nil, false, errCode(err)
		}
		defer tr.Close()
	}
	if err := cc.send(&ctlproto.Response{Kind: ctlproto.KindStarted}); err != nil {
		return nil, true, nil
	}
	var deadline <-chan time.Time
	if q.DurationMS > 0 {
		t := time.NewTimer(time.Duration(q.DurationMS) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	var tick, poll <-chan time.Time
	var pollTimer *time.Timer
	if ag != nil {
		iv := time.Second
		if q.IntervalMS > 0 {
			iv = time.Duration(q.IntervalMS) * time.Millisecond
		}
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	} else {
		pollTimer = time.NewTimer(time.Hour)
		defer pollTimer.Stop()
		poll = pollTimer.C
	}
	lastStat := time.Now()
	statNow := func() error {
		lastStat = time.Now()
		return cc.send(&ctlproto.Response{Kind: ctlproto.KindStat, Stat: toStat(ag.Snapshot())})
	}
	endNow := func() *ctlproto.Response {
		r := &ctlproto.Response{Kind: ctlproto.KindEnd}
		if tr != nil {
			r.Drops = tr.Drops()
		}
		return r
	}
	w := newBatcher(tr)
	count, idle := 0, 0
	for {
		if tr != nil {
			limit := maxBatchEvents
			if q.Count > 0 {
				limit = min(limit, q.Count-count)
			}
			if batch := w.next(limit); batch != nil {
				if err := cc.send(batch); err != nil {
					return nil, true, nil
				}
				if count += w.n; q.Count > 0 && count >= q.Count {
					return endNow(), false, nil
				}
				idle = 0
			} else {
				idle++
			}
			if idle == 0 {
				pollTimer.Reset(0) // more may be waiting: look again at once
			} else {
				pollTimer.Reset(backoff(idle))
			}
		}
		select {
		case <-poll:
		case <-tick:
			if err := statNow(); err != nil {
				return nil, true, nil
			}
		case <-deadline:
			if ag != nil && time.Since(lastStat) > 100*time.Millisecond {
				statNow()
			}
			return endNow(), false, nil
		case r, ok := <-reqs:
			if !ok {
				return nil, true, nil
			}
			if r.Op != ctlproto.OpStop {
				cc.fail(ctlproto.Errorf(ctlproto.CodeBadRequest, "%s during %s: send stop first", r.Op, q.Op))
				continue
			}
			if ag != nil {
				statNow()
			}
			return endNow(), false, nil
		}
	}
}
