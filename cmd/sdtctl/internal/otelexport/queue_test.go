package otelexport

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// stuckExporter takes the first batches, then waits for its context: a collector that
// stopped answering.
type stuckExporter struct {
	mu    sync.Mutex
	took  int
	until int // spans it takes before it hangs
}

func (e *stuckExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	if e.took < e.until {
		e.took += len(spans)
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	<-ctx.Done()
	return ctx.Err()
}

func (e *stuckExporter) Shutdown(context.Context) error { return nil }

// TestQueueAccounting: every sampled span ended is exported, dropped in the queue, or
// failed, once, also when the exporter hangs and the shutdown runs out of time; and
// ending spans never waits for the exporter.
func TestQueueAccounting(t *testing.T) {
	exp := &stuckExporter{until: 1000}
	q := newQueue(exp, QueueOptions{Size: 500, Batch: 100, Delay: 10 * time.Millisecond, Timeout: time.Hour})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q))
	tr := tp.Tracer("test")
	const n = 20000
	t0 := time.Now()
	for i := range n {
		_, s := tr.Start(context.Background(), "s")
		s.End()
		if i%1000 == 0 {
			time.Sleep(time.Millisecond) // let the first batches through
		}
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("ending %d spans took %v: it waited for the exporter", n, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := tp.Shutdown(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with a hung exporter: %v, want the deadline", err)
	}
	ended, exported, dropped, failed := q.ended.Load(), q.exported.Load(), q.dropped.Load(), q.failed.Load()
	t.Logf("%d ended: %d exported, %d dropped, %d failed", ended, exported, dropped, failed)
	if ended != n || exported+dropped+failed != n || exported != uint64(exp.took) || dropped == 0 || failed == 0 {
		t.Errorf("%d ended: %d exported + %d dropped + %d failed, want %d, %d exported", ended, exported, dropped, failed, n, exp.took)
	}
}
