package otelsdt_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/gosdt/gosdt/sdt/control"
	"github.com/gosdt/gosdt/sdt/otelsdt"
)

func TestTraceparent(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	for _, tc := range []struct {
		flags trace.TraceFlags
		want  string
	}{
		{trace.FlagsSampled, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{0, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"},
	} {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: tc.flags})
		if got := otelsdt.Traceparent(trace.ContextWithSpanContext(context.Background(), sc)); got != tc.want {
			t.Errorf("Traceparent = %q, want %q", got, tc.want)
		}
	}
	if got := otelsdt.Traceparent(context.Background()); got != "" {
		t.Errorf("Traceparent of a context without a span = %q, want \"\"", got)
	}
}

// TestContextArgument: with the package imported, an fbt probe (handle, as the
// rewriter instruments it: handle_gen_test.go) carries a context.Context argument as the traceparent of its span (a remote one too), and by
// its type's name when the context holds none.
func TestContextArgument(t *testing.T) {
	tr, err := control.OpenTrace("fbt:bridge::entry", control.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	handle(trace.ContextWithRemoteSpanContext(context.Background(), sc), 1)
	handle(context.Background(), 2)
	// By n: the two calls' events may come from two Ps' buffers, in either order.
	want := map[string]string{"1": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "2": "context.Context"}
	got := map[string]string{}
	evs := make([]control.Event, 4)
	for deadline := time.Now().Add(10 * time.Second); len(got) < len(want) && time.Now().Before(deadline); {
		n, err := tr.Read(evs, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs[:n] {
			if len(ev.Args) != 2 || ev.Args[0].Name != "ctx" {
				t.Fatalf("event %+v, want the arguments ctx and n", ev)
			}
			got[fmt.Sprint(ev.Args[1].Value)] = ev.Args[0].Value.(string)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("ctx carried as %q (by n), want %q", got, want)
	}
}
