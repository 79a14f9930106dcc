package sdt

import (
	"math"
	"reflect"
	"unsafe"

	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

// MaxArgs is the most arguments a probe has (Define0..Define6).
const MaxArgs = 6

// The control plane's records have as many slots: a compile error if they differ.
const _ = uint(MaxArgs-bridge.MaxArgs) + uint(bridge.MaxArgs-MaxArgs)

// argv is a fire's arguments as slots, built on the fire's stack only when a
// consumer is attached (package control's traces and aggregations).
type argv = bridge.Args

// kindOf is the slot kind of an argument type: from its underlying kind, so that
// named types (type Reason int) work.
func kindOf(t reflect.Type) bridge.Kind {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return bridge.Int
	case reflect.Bool:
		return bridge.Bool
	case reflect.Float32, reflect.Float64:
		return bridge.Float
	case reflect.String:
		return bridge.String
	}
	return bridge.Uint
}

// setArg stores argument i; the generated fire methods call it with a pointer to
// their parameter.
func setArg[T Arg](v *argv, i int, x *T) {
	setSlot(v, i, reflect.TypeFor[T](), unsafe.Pointer(x))
	if i >= v.N {
		v.N = i + 1
	}
}

// setSlot stores argument i, of a type with an Arg kind, reading through p by the
// type's underlying kind (so that named types work).
func setSlot(v *argv, i int, t reflect.Type, p unsafe.Pointer) {
	var s uint64
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
		v.Strs[i] = *(*string)(p)
	}
	v.Kinds[i], v.Slots[i] = kindOf(t), s
}
