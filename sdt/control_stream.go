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
	cc.descs = map[[2]uintptr]uint64{}
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
			// Send what has arrived, in one batch.
			batch := &ctlproto.Response{Kind: ctlproto.KindEvents}
			var last int64
			for {
				last = cc.appendEvent(batch, &e, last)
				if count++; q.Count > 0 && count >= q.Count {
					break
				}
				if len(batch.Records) > maxBatch {
					break
				}
				var ok bool
				select {
				case e, ok = <-c.events:
				default:
				}
				if !ok {
					break
				}
			}
			if err := cc.send(batch); err != nil {
				return nil, true, nil
			}
			if q.Count > 0 && count >= q.Count {
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

// maxBatch bounds the records of one events frame, in bytes: far below
// ctlproto.MaxFrame, since a record is at most a few hundred bytes.
const maxBatch = 64 << 10

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

// appendEvent adds a ring event to a batch, with its description if the stream has
// not sent it yet; last is the time of the batch's previous record, and the event's
// is returned.
func (cc *conn) appendEvent(batch *ctlproto.Response, e *event, last int64) int64 {
	k := [2]uintptr{uintptr(e.Probe), e.Site}
	id, ok := cc.descs[k]
	if !ok {
		id = uint64(len(cc.descs) + 1)
		cc.descs[k] = id
		batch.Descs = append(batch.Descs, describe(id, e))
	}
	t := eventTime(e.Time).UnixNano()
	b := ctlproto.AppendRecordHead(batch.Records, id, t-last, int(e.NArgs))
	for i := 0; i < int(e.NArgs); i++ {
		var str []byte
		if e.Kinds[i] == kindString {
			off, n := int(e.Args[i]>>8), int(e.Args[i]&0xff)
			str = e.Str[off : off+n]
		}
		b = ctlproto.AppendValue(b, int(e.Kinds[i]), e.Trunc&(1<<i) != 0, e.Args[i], str)
	}
	batch.Records = b
	return t
}

// describe names the probe and site of an event, for its stream's description.
func describe(id uint64, e *event) ctlproto.Desc {
	ds := ctlproto.Desc{ID: id, Probe: "?", Site: uint64(e.Site)}
	p := probeByID(e.Probe)
	if p == nil {
		return ds
	}
	module, fn := p.module, ""
	reg.mu.Lock()
	for _, s := range p.sites {
		if s.Addr == e.Site {
			module, fn = s.Module, s.Func
		}
	}
	reg.mu.Unlock()
	ds.Probe = p.provider + ":" + module + ":" + fn + ":" + p.name
	for i := range p.args {
		ds.Args = append(ds.Args, ctlproto.Arg{Name: p.args[i], Type: p.types[i]})
	}
	return ds
}
