// Package spanctx is where an opt-in package gives the text that an fbt probe carries
// for a context.Context argument: package sdt/otelsdt sets it to the W3C traceparent
// of the span the context holds, so that sdtctl export can make the call that span's
// child. Without it (every program that does not import sdt/otelsdt) such an argument
// is carried by its type's name, as any other interface.
package spanctx

import (
	"context"
	"sync/atomic"
)

// Text is the text of a context.Context argument; "" when the context says nothing
// (then the argument is carried by its type's name). It runs on the calling goroutine
// of every traced call with such an argument: it must not block.
type Text func(ctx context.Context) string

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
