// Package otelsdt joins gosdt's function probes to a program's own OpenTelemetry
// traces. A program that already uses OpenTelemetry imports it for its effect:
//
//	import _ "github.com/gosdt/gosdt/sdt/otelsdt"
//
// From then on an fbt probe (sdtctl toolexec -rules) carries a context.Context
// argument as the W3C traceparent of the span the context holds
// ("00-<trace id>-<span id>-<flags>"), and sdtctl export makes the probed call a
// child of that span: same trace id, its parent the program's span, sampled as the
// program sampled it. Probes fired on the goroutine while the call runs become events
// of the call's span. A context that holds no valid span is carried by its type's
// name, as without this package.
//
// The package depends on the OpenTelemetry API (go.opentelemetry.io/otel/trace), not
// on its SDK, and costs nothing until a probe with a context.Context argument is on and
// traced: then one span context lookup and one 55-byte string per call.
package otelsdt

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/gosdt/gosdt/sdt/internal/spanctx"
)

func init() {
	spanctx.Set(func(v any) string {
		if ctx, ok := v.(context.Context); ok {
			return Traceparent(ctx)
		}
		return ""
	})
}

// Traceparent is the W3C traceparent of the span ctx holds, "" when it holds no valid
// span context: what an fbt probe carries for a context.Context argument.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	hexTo(b[3:35], tid[:])
	b[35] = '-'
	hexTo(b[36:52], sid[:])
	b[52] = '-'
	hexTo(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

func hexTo(dst, src []byte) {
	const digits = "0123456789abcdef"
	for i, c := range src {
		dst[2*i], dst[2*i+1] = digits[c>>4], digits[c&15]
	}
}
