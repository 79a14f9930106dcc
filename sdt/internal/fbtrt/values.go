package sdt

import (
	"reflect"
	"unsafe"

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
