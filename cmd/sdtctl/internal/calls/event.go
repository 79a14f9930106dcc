package calls

import (
	"math"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// Event is one fire: its record, kept until the call it belongs to is done with it.
type Event struct {
	Probe     *Probe
	Ticks     uint64
	Goroutine uint64
	rec       ctlproto.Record
	stream    int
	seq       uint64 // arrival order: ties of Ticks keep it
}

// NewEvent is the event of rec, a record p describes, from stream; rec must stay
// unchanged while the event is used (a copy of the batch's records).
func NewEvent(p *Probe, rec ctlproto.Record, stream int) *Event {
	e := new(Event)
	e.Set(p, rec, stream)
	return e
}

// Set makes e the event of rec (NewEvent, in an Event the caller allocated: a batch's
// events in one slice).
func (e *Event) Set(p *Probe, rec ctlproto.Record, stream int) {
	*e = Event{Probe: p, Ticks: rec.Ticks(), Goroutine: rec.Goroutine(), rec: rec, stream: stream}
}

// Value is an argument's value: Kind says which field holds it.
type Value struct {
	Kind  byte // ctlproto.ValInt ..
	Int   int64
	Uint  uint64
	Bool  bool
	Float float64
	Str   string
	Cut   bool // a string cut to its bound in the process
}

// Arg is argument i of the event (a Value of kind ValInt 0 past the last).
func (e *Event) Arg(i int) Value {
	if i >= e.rec.N() || i >= len(e.Probe.Kinds) {
		return Value{}
	}
	k := e.Probe.Kinds[i]
	s := e.rec.Slot(i)
	v := Value{Kind: k}
	switch k {
	case ctlproto.ValInt:
		v.Int = int64(s)
	case ctlproto.ValUint:
		v.Uint = s
	case ctlproto.ValBool:
		v.Bool = s != 0
	case ctlproto.ValFloat:
		v.Float = math.Float64frombits(s)
	case ctlproto.ValString:
		if l, err := e.rec.Layout(e.Probe.Kinds); err == nil {
			v.Str, v.Cut = string(l.Str(e.rec, i)), e.rec.Cut(i)
		}
	}
	return v
}

// Len is the length of string argument i without reading it; 0 for another kind.
func (e *Event) Len(i int) int {
	if i < e.N() && e.Probe.Kinds[i] == ctlproto.ValString {
		return int(min(e.rec.Slot(i), ctlproto.StringMax))
	}
	return 0
}

// N is the number of the event's arguments.
func (e *Event) N() int { return min(e.rec.N(), len(e.Probe.Kinds)) }

// Latency is the latency_ns of a return or timed event, in nanoseconds (0 if it is
// negative).
func (e *Event) Latency() int64 {
	v := e.Arg(0)
	if v.Kind == ctlproto.ValUint {
		return int64(min(v.Uint, math.MaxInt64))
	}
	return max(v.Int, 0)
}

// Panicking is a return's panicking argument.
func (e *Event) Panicking() bool {
	if e.Probe.Panicking < 0 {
		return false
	}
	v := e.Arg(e.Probe.Panicking)
	return v.Bool || v.Int != 0 || v.Uint != 0
}

// Call is one call of a function on one goroutine, or a timed block.
type Call struct {
	Goroutine  uint64
	Entry      *Event // nil when its entry was not seen
	Return     *Event // the return or timed event; nil for a call that did not end
	Parent     *Call  // the call open on the goroutine when it began; nil at the top
	Start, End uint64 // ticks
	// Unfinished is set on a call that ended without its return: a later return on
	// its goroutine closed a call it was inside (its own was lost), or the export
	// ended while it was open.
	Unfinished bool
	Data       any // the Sink's
	probe      *Probe
}

// Probe is the call's entry probe, else its return's.
func (c *Call) Probe() *Probe { return c.probe }
