package control

import (
	"math"

	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

// Limits of an event record. Records have a fixed size, so that a trace's ring never
// allocates: integer, bool and float arguments are 64-bit slots; a string argument is
// copied into the record's string area, cut to StringMax bytes, and cut further (to
// nothing, if need be) once stringArea bytes of one event are used.
const (
	StringMax  = 64  // bytes kept of one string argument of a traced event
	stringArea = 192 // bytes of string data in one event
)

// record is one fire as a trace's ring holds it: fixed size, no pointers. There is no
// goroutine id: Go has no cheap way to read it (runtime.Stack costs microseconds).
type record struct {
	time  int64   // monotonic nanoseconds (runtime clock); see wallTime
	site  uintptr // the site's address; 0 for a fire not attributed to a site
	probe uint32  // bridge.Probe.ID
	n     uint8
	cut   uint8 // bit i: string argument i was cut
	kinds [bridge.MaxArgs]bridge.Kind
	slots [bridge.MaxArgs]uint64 // a string's is offset<<8 | length in str
	str   [stringArea]byte
}

// fill copies a fire into rec, cutting strings to the documented bounds.
func (rec *record) fill(t int64, site uintptr, probe uint32, a *bridge.Args) {
	rec.time, rec.site, rec.probe = t, site, probe
	rec.n = uint8(a.N)
	rec.cut = 0
	rec.kinds = a.Kinds
	used := 0
	for i := 0; i < a.N; i++ {
		if a.Kinds[i] != bridge.String {
			rec.slots[i] = a.Slots[i]
			continue
		}
		s := a.Strs[i]
		n := min(len(s), StringMax, stringArea-used)
		if n < len(s) {
			rec.cut |= 1 << i
		}
		copy(rec.str[used:used+n], s)
		rec.slots[i] = uint64(used)<<8 | uint64(n)
		used += n
	}
}

// strBytes is string argument i's bytes, as copied.
func (rec *record) strBytes(i int) []byte {
	off, n := int(rec.slots[i]>>8), int(rec.slots[i]&0xff)
	if off+n > len(rec.str) {
		return nil
	}
	return rec.str[off : off+n]
}

// value is argument i as a Go value: int64, uint64, bool, float64 or string.
func (rec *record) value(i int) any {
	s := rec.slots[i]
	switch rec.kinds[i] {
	case bridge.Int:
		return int64(s)
	case bridge.Uint:
		return s
	case bridge.Bool:
		return s != 0
	case bridge.Float:
		return math.Float64frombits(s)
	}
	return string(rec.strBytes(i))
}
