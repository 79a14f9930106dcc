package otelexport

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is what the OpenTelemetry environment variables say (the SDK's exporters read
// their endpoints, headers, timeouts, compression and certificates themselves).
type Config struct {
	Traces, Metrics bool   // OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER: otlp (default) or none
	TracesProtocol  string // "http/protobuf" (default) or "grpc"
	MetricsProtocol string
	Sampler         sdktrace.Sampler
	SamplerName     string        // as given, for messages
	Interval        time.Duration // OTEL_METRIC_EXPORT_INTERVAL, default 10s
	Exponential     bool          // OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION=base2_exponential_bucket_histogram
	Queue           QueueOptions  // OTEL_BSP_*
}

// QueueOptions shape the queue of spans waiting to be exported.
type QueueOptions struct {
	Size    int           // spans it holds (OTEL_BSP_MAX_QUEUE_SIZE, default 8192); more are dropped
	Batch   int           // spans one export sends at most (OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512)
	Delay   time.Duration // longest a span waits for a batch to fill (OTEL_BSP_SCHEDULE_DELAY, 1s)
	Timeout time.Duration // one export, its retries included (OTEL_BSP_EXPORT_TIMEOUT, 30s)
}

// FromEnv reads the configuration from getenv (os.Getenv); a value it cannot use is
// an error that names the variable.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{Traces: true, Metrics: true, Interval: 10 * time.Second,
		Queue: QueueOptions{Size: 8192, Batch: 512, Delay: time.Second, Timeout: 30 * time.Second}}
	var err error
	if c.Traces, err = exporterOn(getenv, "OTEL_TRACES_EXPORTER"); err != nil {
		return c, err
	}
	if c.Metrics, err = exporterOn(getenv, "OTEL_METRICS_EXPORTER"); err != nil {
		return c, err
	}
	if c.TracesProtocol, err = protocol(getenv, "TRACES"); err != nil {
		return c, err
	}
	if c.MetricsProtocol, err = protocol(getenv, "METRICS"); err != nil {
		return c, err
	}
	if c.Sampler, c.SamplerName, err = sampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return c, err
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"OTEL_METRIC_EXPORT_INTERVAL", &c.Interval}, {"OTEL_BSP_SCHEDULE_DELAY", &c.Queue.Delay}, {"OTEL_BSP_EXPORT_TIMEOUT", &c.Queue.Timeout}} {
		if v := getenv(d.name); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return c, fmt.Errorf("%s=%q: want milliseconds above 0", d.name, v)
			}
			*d.to = time.Duration(ms) * time.Millisecond
		}
	}
	for _, n := range []struct {
		name string
		to   *int
	}{{"OTEL_BSP_MAX_QUEUE_SIZE", &c.Queue.Size}, {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &c.Queue.Batch}} {
		if v := getenv(n.name); v != "" {
			x, err := strconv.Atoi(v)
			if err != nil || x <= 0 {
				return c, fmt.Errorf("%s=%q: want a count above 0", n.name, v)
			}
			*n.to = x
		}
	}
	c.Queue.Batch = min(c.Queue.Batch, c.Queue.Size)
	switch v := getenv("OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION"); v {
	case "", "explicit_bucket_histogram":
	case "base2_exponential_bucket_histogram":
		c.Exponential = true
	default:
		return c, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION=%q: want explicit_bucket_histogram or base2_exponential_bucket_histogram", v)
	}
	return c, nil
}

func exporterOn(getenv func(string) string, name string) (bool, error) {
	switch v := getenv(name); v {
	case "", "otlp":
		return true, nil
	case "none":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: sdtctl export sends otlp (or none; for JSON on stdout, --json)", name, v)
	}
}

// protocol is OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf (the specification's default).
func protocol(getenv func(string) string, signal string) (string, error) {
	name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	v := getenv(name)
	if v == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		v = getenv(name)
	}
	switch v {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	case "http/json":
		return "", fmt.Errorf("%s=http/json: the Go SDK's exporters send http/protobuf or grpc", name)
	}
	return "", fmt.Errorf("%s=%q: want http/protobuf or grpc", name, v)
}

// sampler is the sampler OTEL_TRACES_SAMPLER and its argument name, as the
// specification defines them (the default: parentbased_always_on). Calls decide at
// their entry, before a span is built; a call's nested calls follow it.
func sampler(name, arg string) (sdktrace.Sampler, string, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), "parentbased_always_on", nil
	case "always_on":
		return sdktrace.AlwaysSample(), name, nil
	case "always_off":
		return sdktrace.NeverSample(), name, nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), name, nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, "", err
		}
		s := sdktrace.TraceIDRatioBased(r)
		if name == "parentbased_traceidratio" {
			s = sdktrace.ParentBased(s)
		}
		return s, fmt.Sprintf("%s %g", name, r), nil
	}
	return nil, "", fmt.Errorf("OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", name)
}
