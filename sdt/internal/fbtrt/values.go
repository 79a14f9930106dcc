package fbtrt

import (
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/gosdt/gosdt/sdt/internal/registry"
	"github.com/gosdt/gosdt/sdt/internal/spanctx"
)

// What an fbt probe carries for an argument or result of an interface type that says
// more than its type's name: an error its text ("<nil>" for nil), so that a consumer
// tells a call that failed and why (sdtctl export's span status); a context.Context
// the text sdt/otelsdt gives it (the traceparent of its span), when a program imports
// that package.
// context.Context is recognized by its name, not its type: naming the type would link
// time's formatting (spanctx.Text says why).
var errorType = reflect.TypeFor[error]()

// nilError is what an fbt probe carries for a nil error.
const nilError = "<nil>"

// interfaceText is the text of the value of interface type t at p, and whether it has
// one other than its type's name.
func interfaceText(t reflect.Type, p unsafe.Pointer) (string, bool) {
	switch {
	case t == errorType:
		err := *(*error)(p)
		if err == nil {
			return nilError, true
		}
		return errorText(err), true
	case t.Name() == "Context" && t.PkgPath() == "context":
		if f := spanctx.Get(); f != nil {
			if ctx := reflect.NewAt(t, p).Elem(); !ctx.IsNil() {
				if s := f(ctx.Interface()); s != "" {
					return s, true
				}
			}
		}
	}
	return "", false
}

// errorText is err.Error(), or its type's name when that panics (a nil pointer in a
// non-nil error): the program's error does not become a panic of the probe's.
func errorText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = reflect.TypeOf(err).String()
		}
	}()
	return err.Error()
}

// kindOfName is the slot kind of an argument known only by its type's name (fbt):
// Unknown for a named type, whose fires tell.
func kindOfName(t string) registry.Kind {
	switch t {
	case "int", "int8", "int16", "int32", "int64", "time.Duration":
		return registry.Int
	case "uint", "uint8", "uint16", "uint32", "uint64", "uintptr", "byte":
		return registry.Uint
	case "bool":
		return registry.Bool
	case "float32", "float64":
		return registry.Float
	case "string":
		return registry.String
	}
	if strings.HasPrefix(t, "*") || strings.HasPrefix(t, "map[") || strings.HasPrefix(t, "chan ") ||
		strings.HasPrefix(t, "func(") || t == "unsafe.Pointer" {
		return registry.Uint // carried by address
	}
	return registry.Unknown
}

// setSlot stores argument i, of a type with an Arg kind, reading through p by the
// type's underlying kind (so that named types work).
func setSlot(v *registry.Args, i int, t reflect.Type, p unsafe.Pointer) {
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
	v.Kinds[i], v.Slots[i] = registry.KindOf(t), s
}
