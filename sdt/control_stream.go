package sdt

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
	var agg *aggregation
	if q.Op == ctlproto.OpStat {
		by, err := parseAggBy(q.By)
		if err != nil {
			return nil, false, ctlproto.Errorf(ctlproto.CodeBadRequest, "%v", err)
		}
		val := -1
		if q.Hist != "" {
			if val, err = argIndex(q.Hist); err != nil {
				return nil, false, ctlproto.Errorf(ctlproto.CodeBadRequest, "hist: %v", err)
			}
		}
		agg = newAggregation(by, val, val >= 0)
	}
	c, err := openConsumer(cc.name+" "+q.Op, q.Spec, agg)
	if err != nil {
		return nil, false, errCode(err)
	}
	defer c.close()
	if err := cc.send(&ctlproto.Response{Kind: ctlproto.KindStarted}); err != nil {
		return nil, true, nil
	}
	var deadline <-chan time.Time
	if q.DurationMS > 0 {
		t := time.NewTimer(time.Duration(q.DurationMS) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	var tick <-chan time.Time
	if agg != nil {
		iv := time.Second
		if q.IntervalMS > 0 {
			iv = time.Duration(q.IntervalMS) * time.Millisecond
		}
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	lastStat := time.Now()
	statNow := func() error {
		lastStat = time.Now()
		return cc.send(&ctlproto.Response{Kind: ctlproto.KindStat, Stat: toStat(agg.snapshot())})
	}
	count := 0
	for {
		select {
		case e := <-c.events:
			if err := cc.send(&ctlproto.Response{Kind: ctlproto.KindEvent, Event: cc.event(&e)}); err != nil {
				return nil, true, nil
			}
			if count++; q.Count > 0 && count >= q.Count {
				return &ctlproto.Response{Kind: ctlproto.KindEnd, Drops: c.drops()}, false, nil
			}
		case <-tick:
			if err := statNow(); err != nil {
				return nil, true, nil
			}
		case <-deadline:
			if agg != nil && time.Since(lastStat) > 100*time.Millisecond {
				statNow()
			}
			return &ctlproto.Response{Kind: ctlproto.KindEnd, Drops: c.drops()}, false, nil
		case r, ok := <-reqs:
			if !ok {
				return nil, true, nil
			}
			if r.Op != ctlproto.OpStop {
				cc.fail(ctlproto.Errorf(ctlproto.CodeBadRequest, "%s during %s: send stop first", r.Op, q.Op))
				continue
			}
			if agg != nil {
				statNow()
			}
			return &ctlproto.Response{Kind: ctlproto.KindEnd, Drops: c.drops()}, false, nil
		}
	}
}

func toStat(s aggSnapshot) *ctlproto.Stat {
	st := &ctlproto.Stat{Time: time.Now(), By: s.By, Value: s.Value, Overflow: s.Overflow, Rows: []ctlproto.Row{}}
	for _, r := range s.Rows {
		row := ctlproto.Row{Key: r.Key, Count: r.Count, Sum: r.Sum, Min: r.Min, Max: r.Max, Avg: r.Avg}
		for _, b := range r.Hist {
			row.Hist = append(row.Hist, ctlproto.Bucket{Low: b.Low, Count: b.Count})
		}
		st.Rows = append(st.Rows, row)
	}
	return st
}

// event converts a ring event for the wire.
func (cc *conn) event(e *event) *ctlproto.Event {
	p := probeByID(e.Probe)
	out := &ctlproto.Event{Time: eventTime(e.Time), Site: uint64(e.Site)}
	if p == nil {
		out.Probe = "?"
		return out
	}
	k := [2]uintptr{p.self(), e.Site}
	name, ok := cc.names[k]
	if !ok {
		module, fn := p.module, ""
		reg.mu.Lock()
		for _, s := range p.sites {
			if s.Addr == e.Site {
				module, fn = s.Module, s.Func
			}
		}
		reg.mu.Unlock()
		name = p.provider + ":" + module + ":" + fn + ":" + p.name
		cc.names[k] = name
	}
	out.Probe = name
	for i := 0; i < int(e.NArgs) && i < len(p.args); i++ {
		out.Args = append(out.Args, ctlproto.Arg{Name: p.args[i], Type: p.types[i], Value: e.format(i), Cut: e.Trunc&(1<<i) != 0})
	}
	return out
}
