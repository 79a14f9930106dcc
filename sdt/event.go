package sdt

import (
	"math"
	"reflect"
	"strconv"
	"unsafe"
)

// Limits of an event record. Records have a fixed size, so that the ring never
// allocates: integer, bool and float arguments are 64-bit slots; a string argument is
// copied into the record's string area, cut to StringMax bytes, and cut further (to
// nothing, if need be) once StringArea bytes of one event are used.
const (
	MaxArgs    = 6   // arguments of a probe (Define0..Define6)
	StringMax  = 64  // bytes kept of one string argument
	StringArea = 192 // bytes of string data in one event
)

// argKind is how an argument is stored in its slot.
type argKind uint8

const (
	kindInt    argKind = iota // signed integers: the slot is int64(v)
	kindUint                  // unsigned integers and uintptr: uint64(v)
	kindBool                  // 0 or 1
	kindFloat                 // math.Float64bits(float64(v))
	kindString                // offset<<8 | length into the event's string area
)

func (k argKind) String() string {
	return [...]string{"int", "uint", "bool", "float", "string"}[k]
}

// kindOf is the slot kind of an argument type: from its underlying kind, so that
// named types (type Reason int) work.
func kindOf(t reflect.Type) argKind {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return kindInt
	case reflect.Bool:
		return kindBool
	case reflect.Float32, reflect.Float64:
		return kindFloat
	case reflect.String:
		return kindString
	}
	return kindUint
}

// argv is a fire's arguments as slots, built on the fire's stack only when a
// consumer is attached to the probe.
type argv struct {
	n     int
	kinds [MaxArgs]argKind
	slots [MaxArgs]uint64
	strs  [MaxArgs]string // string arguments, not copied: they die with the fire
}

// setArg stores argument i; the generated fire methods call it with a pointer to
// their parameter. It reads through the pointer by the type's underlying kind.
func setArg[T Arg](v *argv, i int, x *T) {
	t := reflect.TypeFor[T]()
	p := unsafe.Pointer(x)
	var s uint64
	k := kindOf(t)
	switch t.Kind() {
	case reflect.Int:
		s = uint64(*(*int)(p))
	case reflect.Int8:
		s = uint64(*(*int8)(p))
	case reflect.Int16:
		s = uint64(*(*int16)(p))
	case reflect.Int32:
		s = uint64(*(*int32)(p))
	case reflect.Int64:
		s = uint64(*(*int64)(p))
	case reflect.Uint:
		s = uint64(*(*uint)(p))
	case reflect.Uint8:
		s = uint64(*(*uint8)(p))
	case reflect.Uint16:
		s = uint64(*(*uint16)(p))
	case reflect.Uint32:
		s = uint64(*(*uint32)(p))
	case reflect.Uint64:
		s = *(*uint64)(p)
	case reflect.Uintptr:
		s = uint64(*(*uintptr)(p))
	case reflect.Bool:
		if *(*bool)(p) {
			s = 1
		}
	case reflect.Float32:
		s = math.Float64bits(float64(*(*float32)(p)))
	case reflect.Float64:
		s = math.Float64bits(*(*float64)(p))
	case reflect.String:
		v.strs[i] = *(*string)(p)
	}
	v.kinds[i], v.slots[i] = k, s
	if i >= v.n {
		v.n = i + 1
	}
}

// event is one fire as the event ring records it: fixed size, no pointers.
// There is no goroutine id: Go has no cheap way to read it (runtime.Stack costs
// microseconds), so events carry none.
type event struct {
	Time  int64   // monotonic nanoseconds (runtime clock); see eventTime
	Site  uintptr // the site's address; 0 for a fire not attributed to a site
	Probe uint32  // the probe's id, see probeByID
	NArgs uint8
	Trunc uint8            // bit i: string argument i was cut
	Kinds [MaxArgs]argKind // how each slot is stored
	Subs  uint64           // which trace subscriptions want this event (bit per subscription)
	Args  [MaxArgs]uint64
	Str   [StringArea]byte
}

// fill copies v into e, cutting strings to the documented bounds.
func (e *event) fill(v *argv) {
	e.NArgs = uint8(v.n)
	e.Trunc = 0
	e.Kinds = v.kinds
	used := 0
	for i := 0; i < v.n; i++ {
		if v.kinds[i] != kindString {
			e.Args[i] = v.slots[i]
			continue
		}
		s := v.strs[i]
		n := min(len(s), StringMax, StringArea-used)
		if n < len(s) {
			e.Trunc |= 1 << i
		}
		copy(e.Str[used:used+n], s)
		e.Args[i] = uint64(used)<<8 | uint64(n)
		used += n
	}
}

// Int is argument i as an integer: what aggregations sum and quantize. Unsigned
// values above MaxInt64 saturate, floats are truncated, strings count their bytes.
func (e *event) Int(i int) int64 {
	s := e.Args[i]
	switch e.Kinds[i] {
	case kindUint:
		if s > math.MaxInt64 {
			return math.MaxInt64
		}
	case kindFloat:
		f := math.Float64frombits(s)
		switch {
		case f != f:
			return 0
		case f >= math.MaxInt64:
			return math.MaxInt64
		case f <= math.MinInt64:
			return math.MinInt64
		}
		return int64(f)
	case kindString:
		return int64(s & 0xff)
	}
	return int64(s)
}

// format returns argument i as text (a string argument as copied).
func (e *event) format(i int) string {
	s := e.Args[i]
	switch e.Kinds[i] {
	case kindInt:
		return strconv.FormatInt(int64(s), 10)
	case kindUint:
		return strconv.FormatUint(s, 10)
	case kindBool:
		return strconv.FormatBool(s != 0)
	case kindFloat:
		return strconv.FormatFloat(math.Float64frombits(s), 'g', -1, 64)
	}
	off, n := int(s>>8), int(s&0xff)
	if off+n > len(e.Str) {
		return ""
	}
	return string(e.Str[off : off+n])
}
