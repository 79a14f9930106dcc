package registry

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// argv is a fire's arguments as slots, built only when a consumer is attached
// (package consume's traces and aggregations), in the P's firing (pfiring.go).
type argv = Args

// firing is a fire as consumers see it (argv, and where it came from).
type firing = Firing

// SetArg stores argument i: a string in Strs, anything else as its raw bits in the
// low bytes of its slot, the rest of the slot cleared (the probe's consumers widen
// small signed integers and float32s to what the slot holds, once per fire: fix).
// The argument's kind (set before, from the definition's type) says which; the size,
// a constant per instantiation, spares the load where T cannot be a string and the
// clearing where T fills the slot. v is a P's firing, which earlier fires wrote
// (PFiring): every field a consumer reads is written.
func SetArg[T any](v *argv, i int, x *T) {
	if unsafe.Sizeof(*x) == unsafe.Sizeof("") && v.Kinds[i] == String {
		v.Strs[i] = *(*string)(unsafe.Pointer(x))
	} else {
		if unsafe.Sizeof(*x) < unsafe.Sizeof(v.Slots[i]) {
			v.Slots[i] = 0
		}
		*(*T)(unsafe.Pointer(&v.Slots[i])) = *x
	}
}

// DropArg clears argument i's string, if T can be one, once the consumers have
// seen it: a P's firing keeps no string alive between fires.
func DropArg[T any](v *argv, i int, x *T) {
	if unsafe.Sizeof(*x) == unsafe.Sizeof("") {
		v.Strs[i] = ""
	}
}

// rawFix says how a probe's raw slots become what Args documents: bit i set when
// argument i, of the given kind and size, needs widening (signed integers and
// float32s narrower than a slot, and on big-endian machines anything narrower).
func rawFix(kinds []Kind, sizes []uint8) uint8 {
	var m uint8
	for i, k := range kinds {
		switch {
		case k == String || sizes[i] == 8 || sizes[i] == 0: // 0: fbt, whose slots are set whole
		case k == Int || k == Float || bigEndian:
			m |= 1 << i
		}
	}
	return m
}

// bigEndian: the raw bits of a narrow value sit in the high bytes of its slot.
var bigEndian = binary.NativeEndian.Uint16([]byte{1, 0}) != 1

// fixSlots widens the raw slots rawFix marked.
func fixSlots(v *argv, mask uint8, sizes *[MaxArgs]uint8) {
	for i := 0; mask != 0; i, mask = i+1, mask>>1 {
		if mask&1 == 0 {
			continue
		}
		v.Slots[i] = widen(unsafe.Pointer(&v.Slots[i]), v.Kinds[i], sizes[i])
	}
}

// widen is the slot whose raw bits, of an argument of kind k and n bytes, are at p.
func widen(p unsafe.Pointer, k Kind, n uint8) uint64 {
	switch {
	case k == Float && n == 4:
		return math.Float64bits(float64(*(*float32)(p)))
	case k == Int && n == 1:
		return uint64(*(*int8)(p))
	case k == Int && n == 2:
		return uint64(*(*int16)(p))
	case k == Int && n == 4:
		return uint64(*(*int32)(p))
	case n == 1:
		return uint64(*(*uint8)(p))
	case n == 2:
		return uint64(*(*uint16)(p))
	case n == 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// ArgInt is argument x, of kind k (its definition's), as Args.Int reads it from a
// firing: what a folder (foldEntry) is given, without a firing.
func ArgInt[T any](x *T, k Kind) int64 {
	if unsafe.Sizeof(*x) == 8 && k == Int { // int, int64: inlined
		return *(*int64)(unsafe.Pointer(x))
	}
	return argIntOf(x, k)
}

func argIntOf[T any](x *T, k Kind) int64 {
	if unsafe.Sizeof(*x) == unsafe.Sizeof("") && k == String {
		return int64(len(*(*string)(unsafe.Pointer(x))))
	}
	// Room for a string-sized T that is not a string (an 8-byte number on a 32-bit
	// machine): the copy below is compiled for every T.
	var w [2]uint64
	*(*T)(unsafe.Pointer(&w)) = *x
	s := w[0]
	if n := unsafe.Sizeof(*x); n < 8 {
		s = widen(unsafe.Pointer(&w), k, uint8(n))
	}
	if k == Int {
		return int64(s)
	}
	return SlotInt(k, s, 0)
}
