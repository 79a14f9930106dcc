package otelexport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// queue is the span processor of one traced process: spans wait in a bounded queue
// and a goroutine exports them in batches, as the SDK's BatchSpanProcessor does, but
// counting exactly what it drops (the queue full), what the exporter failed to send
// (after its own retries) and what it sent: the SDK's processor counts its drops in a
// field it does not show. A span never waits for room: a slow or unreachable
// collector costs spans, counted, never the time of whoever ends them.
type queue struct {
	exp sdktrace.SpanExporter
	o   QueueOptions
	ch  chan sdktrace.ReadOnlySpan

	ended    atomic.Uint64 // sampled spans ended
	dropped  atomic.Uint64 // the queue was full
	failed   atomic.Uint64 // in exports that failed
	exported atomic.Uint64
	lastErr  atomic.Pointer[error]

	ctx     context.Context // of every export; canceled when a Shutdown runs out of time
	cancel  context.CancelFunc
	flush   chan chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

func newQueue(exp sdktrace.SpanExporter, o QueueOptions) *queue {
	q := &queue{exp: exp, o: o, ch: make(chan sdktrace.ReadOnlySpan, o.Size),
		flush: make(chan chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	go q.run()
	return q
}

func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	q.ended.Add(1)
	select {
	case q.ch <- s:
	default:
		q.dropped.Add(1)
	}
}

// run sends batches: when one is full, when the oldest span of one has waited Delay,
// when asked (ForceFlush), and what is left at Shutdown.
func (q *queue) run() {
	defer close(q.stopped)
	defer q.cancel()
	batch := make([]sdktrace.ReadOnlySpan, 0, q.o.Batch)
	timer := time.NewTimer(q.o.Delay)
	defer timer.Stop()
	send := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(q.ctx, q.o.Timeout)
		err := q.exp.ExportSpans(ctx, batch)
		cancel()
		if err != nil {
			q.failed.Add(uint64(len(batch)))
			q.lastErr.Store(&err)
		} else {
			q.exported.Add(uint64(len(batch)))
		}
		clear(batch)
		batch = batch[:0]
	}
	drain := func() {
		for {
			select {
			case s := <-q.ch:
				batch = append(batch, s)
				if len(batch) == q.o.Batch {
					send()
				}
			default:
				send()
				return
			}
		}
	}
	for {
		select {
		case s := <-q.ch:
			batch = append(batch, s)
			if len(batch) == q.o.Batch {
				send()
				timer.Reset(q.o.Delay)
			}
		case <-timer.C:
			send()
			timer.Reset(q.o.Delay)
		case done := <-q.flush:
			drain()
			close(done)
		case <-q.stop:
			drain()
			return
		}
	}
}

// ForceFlush sends what is queued, waiting for it or for ctx.
func (q *queue) ForceFlush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case q.flush <- done:
	case <-q.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown sends what is queued, waiting for it until ctx is done: then the export
// under way is canceled and what is left counts as failed. The exporter is shut down
// by its owner (it serves every process).
func (q *queue) Shutdown(ctx context.Context) error {
	q.once.Do(func() { close(q.stop) })
	select {
	case <-q.stopped:
		return nil
	case <-ctx.Done():
	}
	q.cancel()
	<-q.stopped // the exporters return when their context is canceled
	return ctx.Err()
}
