// Package spanctx is where an opt-in package gives the text that an fbt probe carries
// for a context.Context argument: package sdt/otelsdt sets it to the W3C traceparent
// of the span the context holds, so that sdtctl export can make the call that span's
// child. Without it (every program that does not import sdt/otelsdt) such an argument
// is carried by its type's name, as any other interface.
package spanctx

import "sync/atomic"

// Text is the text of a context.Context argument, ctx (non-nil); "" when the context
// says nothing (then the argument is carried by its type's name). It runs on the
// calling goroutine of every traced call with such an argument: it must not block.
//
// It takes the context as an any: a package that names the type context.Context links
// the descriptor of its Deadline's time.Time, and with it time's formatting (90 KB of
// every program that imports sdt: sdt/importcost_test.go).
type Text func(ctx any) string

var text atomic.Pointer[Text]

// Set installs f; nil removes it.
func Set(f Text) {
	if f == nil {
		text.Store(nil)
		return
	}
	text.Store(&f)
}

// Get returns what Set installed, nil when nothing is.
func Get() Text {
	if p := text.Load(); p != nil {
		return *p
	}
	return nil
}
