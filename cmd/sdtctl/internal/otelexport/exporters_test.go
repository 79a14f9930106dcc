package otelexport

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// waitingExporter's exports wait for their context, as a request to a slow endpoint
// does, or return err at once.
type waitingExporter struct {
	sdkmetric.Exporter
	err error
}

func (w waitingExporter) Export(ctx context.Context, _ *metricdata.ResourceMetrics) error {
	if w.err != nil {
		return w.err
	}
	<-ctx.Done()
	return fmt.Errorf("failed to upload metrics: Post \"http://127.0.0.1/v1/metrics\": %w", ctx.Err())
}

// TestMetricExportFailures: an export the reader's shutdown canceled in flight is no
// failure (the shutdown's own export carries the same cumulative points), one that
// ran out of the flush's time or that the endpoint refused is; a 404 on metrics is
// a backend of traces only.
func TestMetricExportFailures(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	timedOut, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-timedOut.Done()
	for _, c := range []struct {
		name          string
		ctx           context.Context
		err           error
		failed, no404 uint64
	}{
		{"canceled by the reader's shutdown", canceled, nil, 0, 0},
		{"out of the flush's time", timedOut, nil, 1, 0},
		{"refused", context.Background(), errors.New("failed to send metrics to http://x/v1/metrics: 500 Internal Server Error"), 1, 0},
		{"no metrics receiver", context.Background(), errors.New("failed to send metrics to http://x/v1/metrics: 404 Not Found"), 0, 1},
	} {
		m := &processMetrics{Exporter: waitingExporter{err: c.err}}
		if err := m.Export(c.ctx, &metricdata.ResourceMetrics{}); err == nil {
			t.Errorf("%s: the export's error was not returned", c.name)
		}
		if m.failed.Load() != c.failed || m.noReceiver.Load() != c.no404 {
			t.Errorf("%s: %d failed, %d without a receiver; want %d, %d", c.name, m.failed.Load(), m.noReceiver.Load(), c.failed, c.no404)
		}
	}
}
