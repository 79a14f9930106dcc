package consume

import (
	"math"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// Record is one event as Trace.Each hands it over: a view of the trace's buffer,
// valid only during the call.
type Record struct {
	t     *Trace
	rec   ctlproto.Record
	st    *probeState
	kinds []byte
	l     ctlproto.Layout
	clock ctlproto.Clock
}

// set points r at rec; false if rec cannot be read (not one of the trace's probes,
// or not as its probe's kinds say: neither can happen to a record this process
// wrote).
func (r *Record) set(rec ctlproto.Record) bool {
	probes := r.t.s.probes.Load()
	if int(rec.Probe()) >= len(*probes) {
		return false
	}
	st := &(*probes)[rec.Probe()]
	if st.p == nil {
		return false
	}
	if st != r.st {
		r.st, r.kinds = st, st.kindsOf()
	}
	l, err := rec.Layout(r.kinds)
	if err != nil {
		return false
	}
	r.rec, r.l = rec, l
	return true
}

// Time is when the probe fired.
func (r *Record) Time() time.Time { return time.Unix(0, r.clock.UnixNano(r.rec.Ticks())) }

// Probe is the fire's full name, provider:module:function:name.
func (r *Record) Probe() string { return r.t.c.name(r.rec.Probe(), uintptr(r.rec.Site())) }

// Site is the site's address; 0 for a fire not attributed to a site.
func (r *Record) Site() uintptr { return uintptr(r.rec.Site()) }

// Goroutine is the firing goroutine's id; 0 where it cannot be told.
func (r *Record) Goroutine() uint64 { return r.rec.Goroutine() }

// NumArgs is the number of arguments.
func (r *Record) NumArgs() int { return r.rec.N() }

// Kind is argument i's kind: "int", "uint", "bool", "float" or "string".
func (r *Record) Kind(i int) string {
	return [...]string{"int", "uint", "bool", "float", "string"}[r.kinds[i]]
}

// Int is argument i as an integer: as aggregations see it (a string's length).
func (r *Record) Int(i int) int64 {
	k := registry.Kind(r.kinds[i])
	return registry.SlotInt(k, r.rec.Slot(i), int(r.rec.Slot(i)))
}

// Bytes is string argument i's bytes (cut to StringMax), valid during the call; nil
// for another kind.
func (r *Record) Bytes(i int) []byte {
	if r.kinds[i] != ctlproto.ValString {
		return nil
	}
	return r.l.Str(r.rec, i)
}

// Value is argument i as a Go value: int64, uint64, bool, float64 or string.
func (r *Record) Value(i int) any {
	s := r.rec.Slot(i)
	switch registry.Kind(r.kinds[i]) {
	case registry.Int:
		return int64(s)
	case registry.Uint:
		return s
	case registry.Bool:
		return s != 0
	case registry.Float:
		return math.Float64frombits(s)
	}
	return string(r.l.Str(r.rec, i))
}

// Cut reports whether string argument i was cut to StringMax bytes.
func (r *Record) Cut(i int) bool { return r.rec.Cut(i) }

// Stack appends the return addresses of the fire's call stack (TraceOptions.Stack),
// innermost first, to pcs: runtime.CallersFrames names them.
func (r *Record) Stack(pcs []uintptr) []uintptr {
	for i := range r.l.Depth() {
		pcs = append(pcs, uintptr(r.l.PC(r.rec, i)))
	}
	return pcs
}

// Event copies the record into an Event.
func (r *Record) Event() Event {
	e := Event{Time: r.Time(), Probe: r.Probe(), Site: r.Site(), Goroutine: r.Goroutine(), Args: make([]Arg, r.NumArgs())}
	for i := range e.Args {
		a := &e.Args[i]
		if i < len(r.st.p.Args) {
			a.Name, a.Type = r.st.p.Args[i], r.st.p.Types[i]
		}
		a.Value, a.Cut = r.Value(i), r.Cut(i)
	}
	e.Stack = r.Stack(nil)
	return e
}
