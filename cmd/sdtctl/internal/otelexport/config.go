package otelexport

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
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
	// explicit is, per signal (TRACES, METRICS), whether an endpoint or INSECURE
	// variable says where and how to connect; else the specification's default,
	// http://localhost:4318 (grpc: 4317), is used.
	explicit map[string]bool
}

// defaultEndpoint reports whether nothing in the environment says where signal's
// exporter connects.
func (c Config) defaultEndpoint(signal string) bool { return !c.explicit[signal] }

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
	if c.explicit, err = checkOTLP(getenv); err != nil {
		return c, err
	}
	if err := checkResourceAttrs(getenv("OTEL_RESOURCE_ATTRIBUTES")); err != nil {
		return c, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES=%q: %v (want KEY=VALUE,KEY=VALUE, values percent-encoded)", getenv("OTEL_RESOURCE_ATTRIBUTES"), err)
	}
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

// checkOTLP checks the variables the SDK's OTLP exporters read themselves, which log a
// value they cannot use and go on without it (to another endpoint, with no header, no
// timeout): a bad value is refused here, by name. It returns, per signal, whether an
// endpoint or INSECURE variable is set.
func checkOTLP(getenv func(string) string) (map[string]bool, error) {
	explicit := map[string]bool{}
	for _, signal := range []string{"", "TRACES_", "METRICS_"} {
		v := func(what string) (string, string) {
			name := "OTEL_EXPORTER_OTLP_" + signal + what
			return name, strings.TrimSpace(getenv(name))
		}
		mark := func() {
			if signal == "" {
				explicit["TRACES"], explicit["METRICS"] = true, true
			} else {
				explicit[strings.TrimSuffix(signal, "_")] = true
			}
		}
		if name, val := v("ENDPOINT"); val != "" {
			u, err := url.Parse(val)
			switch {
			case err != nil:
				return nil, fmt.Errorf("%s=%q: not a URL (%v): want http://HOST:PORT or https://HOST:PORT", name, val, errors.Unwrap(err))
			case u.Scheme != "http" && u.Scheme != "https":
				return nil, fmt.Errorf("%s=%q: want an http:// or https:// URL (the OTLP exporters speak nothing else)", name, val)
			case u.Host == "":
				return nil, fmt.Errorf("%s=%q: no host", name, val)
			}
			if _, port, err := net.SplitHostPort(u.Host); err == nil {
				if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
					return nil, fmt.Errorf("%s=%q: port %q is not a port number", name, val, port)
				}
			}
			mark()
		}
		if name, val := v("INSECURE"); val != "" {
			if _, err := strconv.ParseBool(val); err != nil {
				return nil, fmt.Errorf("%s=%q: want true or false", name, val)
			}
			mark()
		}
		if name, val := v("TIMEOUT"); val != "" {
			if ms, err := strconv.Atoi(val); err != nil || ms < 0 {
				return nil, fmt.Errorf("%s=%q: want milliseconds, 0 or above", name, val)
			}
		}
		if name, val := v("COMPRESSION"); val != "" && val != "gzip" && val != "none" {
			return nil, fmt.Errorf("%s=%q: want gzip or none", name, val)
		}
		if name, val := v("HEADERS"); val != "" {
			if err := checkHeaders(val); err != nil {
				return nil, fmt.Errorf("%s=%q: %v (want KEY=VALUE,KEY=VALUE, percent-encoded)", name, val, err)
			}
		}
		for _, what := range []string{"CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
			if name, val := v(what); val != "" {
				b, err := os.ReadFile(val)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", name, err)
				}
				if blk, _ := pem.Decode(b); blk == nil {
					return nil, fmt.Errorf("%s=%q: no PEM block in the file", name, val)
				}
			}
		}
	}
	return explicit, nil
}

// checkHeaders checks OTEL_EXPORTER_OTLP_HEADERS as the SDK reads it (the W3C
// baggage's list: key=value pairs, comma separated, percent-encoded), where it would
// drop a pair it cannot read.
func checkHeaders(v string) error {
	for pair := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("%q has no =", pair)
		}
		key, err := url.PathUnescape(strings.TrimSpace(k))
		if err != nil || key == "" || !isToken(key) {
			return fmt.Errorf("%q is not a header name", k)
		}
		if _, err := url.PathUnescape(strings.TrimSpace(val)); err != nil {
			return fmt.Errorf("the value of %s: %v", key, err)
		}
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110), which a header's name is.
func isToken(s string) bool {
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// checkResourceAttrs checks sdtctl's own OTEL_RESOURCE_ATTRIBUTES, of which the SDK
// would drop a pair it cannot read (a traced process's own are read as it would).
func checkResourceAttrs(v string) error {
	for pair := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		switch {
		case !ok:
			return fmt.Errorf("%q has no =", pair)
		case strings.TrimSpace(k) == "":
			return fmt.Errorf("%q has no key", pair)
		}
		if _, err := url.PathUnescape(strings.TrimSpace(val)); err != nil {
			return fmt.Errorf("the value of %s: %v", strings.TrimSpace(k), err)
		}
	}
	return nil
}
