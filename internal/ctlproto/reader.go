package ctlproto

import (
	"strconv"
	"time"
)

// EventReader decodes the event batches of one trace stream. It keeps what the stream
// has told: the descriptions and the latest clock.
type EventReader struct {
	descs  map[DescKey]*Desc
	frames map[uint64]*Frame
	clock  Clock
	timed  bool
	last   *Desc  // the Desc of the previous record: most records repeat it
	l      Layout // the record's, for Each (not one allocation per record)
}

// DescKey names the events a Desc describes.
type DescKey struct {
	Probe uint32
	Site  uint64
}

// Take learns a batch's descriptions and clock; call it before Each.
func (er *EventReader) Take(r *Response) {
	if er.descs == nil {
		er.descs = map[DescKey]*Desc{}
	}
	for i := range r.Descs {
		ds := r.Descs[i]
		er.descs[DescKey{ds.ID, ds.Site}] = &ds
	}
	if len(r.Descs) > 0 {
		er.last = nil // may be replaced
	}
	if r.Clock != nil {
		er.clock, er.timed = *r.Clock, true
	}
	if len(r.Frames) > 0 && er.frames == nil {
		er.frames = map[uint64]*Frame{}
	}
	for i := range r.Frames {
		f := r.Frames[i]
		er.frames[f.PC] = &f
	}
}

// Frame is the frame of a return address of a record's stack, as the stream named
// it; one of Func "?" if it has not.
func (er *EventReader) Frame(pc uint64) *Frame {
	if f := er.frames[pc]; f != nil {
		return f
	}
	f := &Frame{PC: pc, Func: "?"}
	if er.frames == nil {
		er.frames = map[uint64]*Frame{}
	}
	er.frames[pc] = f
	return f
}

// Desc is the Desc of rec's probe and site; nil if none has been told.
func (er *EventReader) Desc(rec Record) *Desc {
	if ds := er.last; ds != nil && ds.ID == rec.Probe() && ds.Site == rec.Site() {
		return ds
	}
	ds := er.descs[DescKey{rec.Probe(), rec.Site()}]
	if ds != nil {
		er.last = ds
	}
	return ds
}

// Described reports whether a Desc describes rec.
func (er *EventReader) Described(rec Record) bool {
	return er.descs[DescKey{rec.Probe(), rec.Site()}] != nil
}

// Timed reports whether a clock has been told.
func (er *EventReader) Timed() bool { return er.timed }

// Clock is the stream's latest clock.
func (er *EventReader) Clock() *Clock { return &er.clock }

// Each calls f with every record of a batch's records, its Desc and its layout, in
// order, until f returns false. A record that is malformed, or whose Desc has not
// been sent, is an error.
func (er *EventReader) Each(records []byte, f func(rec Record, ds *Desc, l *Layout) bool) error {
	if len(records) > 0 && !er.timed {
		return Errorf(CodeBadRequest, "bad batch: records before any clock")
	}
	for b := records; len(b) > 0; {
		rec, rest, err := Split(b)
		if err != nil {
			return err
		}
		b = rest
		ds := er.last
		if ds == nil || ds.ID != rec.Probe() || ds.Site != rec.Site() {
			if ds = er.descs[DescKey{rec.Probe(), rec.Site()}]; ds == nil {
				return Errorf(CodeBadRequest, "bad batch: record of probe %d at %#x, which no desc describes", rec.Probe(), rec.Site())
			}
			er.last = ds
		}
		l, err := rec.Layout(ds.Kinds)
		if err != nil {
			return err
		}
		er.l = l
		if !f(rec, ds, &er.l) {
			return nil
		}
	}
	return nil
}

// Read decodes the events of one batch (Take, then Each, into Events).
func (er *EventReader) Read(r *Response) ([]Event, error) {
	er.Take(r)
	var out []Event
	err := er.Each(r.Records, func(rec Record, ds *Desc, l *Layout) bool {
		out = append(out, er.Event(rec, ds, l))
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Event is one record as an Event.
func (er *EventReader) Event(rec Record, ds *Desc, l *Layout) Event {
	ev := Event{Time: time.Unix(0, er.clock.UnixNano(rec.Ticks())), Probe: ds.Probe, Site: ds.Site,
		Goroutine: rec.Goroutine(), Args: make([]Arg, rec.N())}
	for i := range ev.Args {
		a := &ev.Args[i]
		if i < len(ds.Args) {
			a.Name, a.Type = ds.Args[i].Name, ds.Args[i].Type
		} else {
			a.Name = "arg" + strconv.Itoa(i)
		}
		a.Value, a.Cut = string(AppendValue(nil, ds.Kinds[i], rec, l, i)), rec.Cut(i)
	}
	for i := range l.Depth() {
		ev.Stack = append(ev.Stack, er.Frame(l.PC(rec, i)).String())
	}
	return ev
}
