package otelexport

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Exporters send the spans and metrics of every traced process: OTLP over one
// connection per signal, as the environment configures the SDK's exporters
// (endpoint, headers, timeout, compression, TLS, and retries with backoff as the OTLP
// specification says), or JSON lines on a writer.
type Exporters struct {
	cfg     Config
	spans   sdktrace.SpanExporter // nil: traces off
	metrics sdkmetric.Exporter    // nil: metrics off
}

// NewExporters makes the exporters cfg asks for; with json, the SDK's stdout
// exporters write one JSON object per span and per metrics export to it instead.
func NewExporters(ctx context.Context, cfg Config, json io.Writer) (*Exporters, error) {
	e := &Exporters{cfg: cfg}
	var err error
	if json != nil {
		if cfg.Traces {
			if e.spans, err = stdouttrace.New(stdouttrace.WithWriter(json)); err != nil {
				return nil, err
			}
		}
		if cfg.Metrics {
			if e.metrics, err = stdoutmetric.New(stdoutmetric.WithWriter(json)); err != nil {
				return nil, err
			}
		}
		return e, nil
	}
	// With no endpoint set the SDK's exporters would use TLS to localhost; the
	// specification's default (and export --help's) is http://localhost:4318 (4317 for
	// grpc).
	if cfg.Traces {
		if cfg.TracesProtocol == "grpc" {
			var opts []otlptracegrpc.Option
			if cfg.defaultEndpoint("TRACES") {
				opts = append(opts, otlptracegrpc.WithInsecure())
			}
			e.spans, err = otlptracegrpc.New(ctx, opts...)
		} else {
			var opts []otlptracehttp.Option
			if cfg.defaultEndpoint("TRACES") {
				opts = append(opts, otlptracehttp.WithInsecure())
			}
			e.spans, err = otlptracehttp.New(ctx, opts...)
		}
		if err != nil {
			return nil, err
		}
	}
	if cfg.Metrics {
		if cfg.MetricsProtocol == "grpc" {
			var opts []otlpmetricgrpc.Option
			if cfg.defaultEndpoint("METRICS") {
				opts = append(opts, otlpmetricgrpc.WithInsecure())
			}
			e.metrics, err = otlpmetricgrpc.New(ctx, opts...)
		} else {
			var opts []otlpmetrichttp.Option
			if cfg.defaultEndpoint("METRICS") {
				opts = append(opts, otlpmetrichttp.WithInsecure())
			}
			e.metrics, err = otlpmetrichttp.New(ctx, opts...)
		}
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Shutdown flushes and closes the exporters (after every process's providers).
func (e *Exporters) Shutdown(ctx context.Context) error {
	var errs []error
	if e.spans != nil {
		errs = append(errs, e.spans.Shutdown(ctx))
	}
	if e.metrics != nil {
		errs = append(errs, e.metrics.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// processMetrics is the shared metric exporter as one process's reader sees it: its
// failures counted for that process, and not shut down with it.
type processMetrics struct {
	sdkmetric.Exporter
	failed     atomic.Uint64 // exports that failed
	noReceiver atomic.Uint64 // exports a traces-only backend refused (NoMetricsReceiver)
	lastErr    atomic.Pointer[error]
}

func (m *processMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := m.Exporter.Export(ctx, rm)
	switch {
	case err == nil:
	case errors.Is(ctx.Err(), context.Canceled):
		// The reader's shutdown cancels a periodic export in flight, then collects and
		// exports once more: every point is cumulative (the producer's), so that last
		// export carries all this one did. Process.Close's own context only times out.
	case NoMetricsReceiver(err):
		m.noReceiver.Add(1)
	default:
		m.failed.Add(1)
		m.lastErr.Store(&err)
	}
	return err
}

// NoMetricsReceiver reports whether err is an endpoint's answer that it takes no
// metrics (HTTP 404 on /v1/metrics, gRPC Unimplemented): a backend of traces only,
// such as Jaeger, which is no failure of the spans.
func NoMetricsReceiver(err error) bool {
	s := err.Error()
	return strings.Contains(s, "failed to send metrics to ") && strings.Contains(s, ": 404 ") ||
		strings.Contains(s, "code = Unimplemented")
}

func (m *processMetrics) Shutdown(context.Context) error { return nil }

// LockedWriter serializes the writes of the JSON exporters and the summaries.
type LockedWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (w *LockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.W.Write(b)
}
