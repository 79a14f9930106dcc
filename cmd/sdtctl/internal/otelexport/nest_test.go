package otelexport

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gosdt/gosdt/cmd/sdtctl/internal/calls"
	"github.com/gosdt/gosdt/internal/ctlproto"
)

// keep is an exporter that keeps what it is given.
type keep struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (k *keep) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.spans = append(k.spans, s...)
	return nil
}
func (k *keep) Shutdown(context.Context) error { return nil }

// TestSpansNest: a call's span holds its children's even when the clock that turns
// ticks into times changed between them (a later batch's, recalibrated): F's return
// comes with a clock that puts it before its child G's end, and before its own start.
func TestSpansNest(t *testing.T) {
	probe := func(name string, args ...string) *calls.Probe {
		d := &ctlproto.Desc{Probe: name}
		for _, a := range args {
			d.Args = append(d.Args, ctlproto.Arg{Name: a})
			d.Kinds = append(d.Kinds, ctlproto.ValInt)
		}
		return calls.NewProbe(d)
	}
	entryF, returnF := probe("fbt:ex:ex.F:entry"), probe("fbt:ex:ex.F:return", "latency_ns")
	entryG, returnG := probe("fbt:ex:ex.G:entry"), probe("fbt:ex:ex.G:return", "latency_ns")
	plain := probe("ex:ex:ex.H:tick")
	k := &keep{}
	e := &Exporters{cfg: Config{Sampler: sdktrace.AlwaysSample(), Queue: QueueOptions{Size: 1 << 10, Batch: 512, Delay: time.Second, Timeout: time.Second}}, spans: k}
	p := e.NewProcess(1, nil, ProcessOptions{})
	ev := func(pr *calls.Probe, ticks, g uint64, args ...uint64) *calls.Event {
		return calls.NewEvent(pr, rec(ticks, g, args...), 0)
	}
	a := &ctlproto.Clock{Wall: 1e18, NsPerTick: 1}
	b := &ctlproto.Clock{Wall: 1e18 - 3e9, NsPerTick: 1}
	// G's calls are released by the plain event 1.5 s on, before F's return comes.
	p.in <- batch{stream: 0, evs: []*calls.Event{ev(entryF, 10, 1), ev(entryG, 20, 1), ev(returnG, 30, 1, 10), ev(plain, 1_500_000_000, 2)}, clock: a}
	p.in <- batch{stream: 0, evs: []*calls.Event{ev(returnF, 2_000_000_000, 1, 1_999_999_990)}, clock: b}
	s := p.Close(time.Second)
	if s.Spans != 2 || len(k.spans) != 2 {
		t.Fatalf("%+v: %d spans, want 2", s, len(k.spans))
	}
	by := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range k.spans {
		by[sp.Name()] = sp
	}
	f, g := by["ex.F"], by["ex.G"]
	if f == nil || g == nil || g.Parent().SpanID() != f.SpanContext().SpanID() {
		t.Fatalf("spans %v: want ex.G a child of ex.F", k.spans)
	}
	if g.StartTime().Before(f.StartTime()) || g.EndTime().After(f.EndTime()) || f.EndTime().Before(f.StartTime()) {
		t.Errorf("ex.F [%v, %v] does not hold ex.G [%v, %v]", f.StartTime().UnixNano(), f.EndTime().UnixNano(), g.StartTime().UnixNano(), g.EndTime().UnixNano())
	}
}
