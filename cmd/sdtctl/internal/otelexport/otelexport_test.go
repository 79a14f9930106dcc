package otelexport

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(env())
	if err != nil || !c.Traces || !c.Metrics || c.TracesProtocol != "http/protobuf" || c.SamplerName != "parentbased_always_on" ||
		c.Interval != 10*time.Second || c.Exponential || c.Queue.Size != 8192 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	c, err = FromEnv(env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf",
		"OTEL_TRACES_SAMPLER", "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG", "0.5", "OTEL_METRIC_EXPORT_INTERVAL", "250",
		"OTEL_METRICS_EXPORTER", "none", "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION", "base2_exponential_bucket_histogram",
		"OTEL_BSP_MAX_QUEUE_SIZE", "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1000"))
	if err != nil || c.TracesProtocol != "grpc" || c.MetricsProtocol != "http/protobuf" || c.SamplerName != "parentbased_traceidratio 0.5" ||
		c.Interval != 250*time.Millisecond || c.Metrics || !c.Exponential || c.Queue.Size != 100 || c.Queue.Batch != 100 {
		t.Errorf("set: %+v, %v", c, err)
	}
	for _, bad := range [][]string{
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}, {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "tcp"},
		{"OTEL_TRACES_SAMPLER", "often"}, {"OTEL_TRACES_SAMPLER", "traceidratio", "OTEL_TRACES_SAMPLER_ARG", "1.5"},
		{"OTEL_TRACES_EXPORTER", "jaeger"}, {"OTEL_METRIC_EXPORT_INTERVAL", "0"}, {"OTEL_BSP_MAX_QUEUE_SIZE", "-1"},
		{"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION", "summary"},
	} {
		if _, err := FromEnv(env(bad...)); err == nil || !strings.Contains(err.Error(), bad[len(bad)-2]) {
			t.Errorf("%v: %v, want an error naming %s", bad, err, bad[len(bad)-2])
		}
	}
}

func TestCodeNames(t *testing.T) {
	for _, tc := range []struct{ module, fn, ns, name string }{
		{"example.com/app/store", "store.(*DB).Get", "example.com/app/store.(*DB)", "Get"},
		{"example.com/app/store", "store.Fib", "example.com/app/store", "Fib"},
		{"example.com/app/store", "store.Map[...]", "example.com/app/store", "Map[...]"},
		{"example.com/app/store", "store.(*Stack[...]).Pop", "example.com/app/store.(*Stack[...])", "Pop"},
		{"gopkg.in/yaml.v3", "yaml.Unmarshal", "gopkg.in/yaml.v3", "Unmarshal"},
		{"main", "main.main.func1", "main.main", "func1"},
	} {
		if ns, name := codeNames(tc.module, tc.fn); ns != tc.ns || name != tc.name {
			t.Errorf("codeNames(%q, %q) = %q, %q; want %q, %q", tc.module, tc.fn, ns, name, tc.ns, tc.name)
		}
	}
	if k := attrKey("http", "status", false); k != "http.response.status_code" {
		t.Errorf("http status: %s", k)
	}
	if k := attrKey("fbt", "status", true); k != "gosdt.result.status" {
		t.Errorf("fbt result status: %s", k)
	}
}

func TestTraceparent(t *testing.T) {
	sc, ok := parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !ok || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() || !sc.IsRemote() {
		t.Errorf("parsed %v %v", sc, ok)
	}
	for _, bad := range []string{"context.Context", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01"} {
		if _, ok := parseTraceparent(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestHistograms: a row's power-of-two buckets become the explicit histogram whose
// bounds are 2^k-1 (the same integers in each bucket), or the exponential one at
// scale 0; counts, sums and bounds carry over.
func TestHistograms(t *testing.T) {
	r := ctlproto.Row{Key: "p", Count: 7, Sum: 3100, Min: 0, Max: 2000,
		Hist: []ctlproto.Bucket{{Low: 0, Count: 1}, {Low: 1, Count: 1}, {Low: 4, Count: 2}, {Low: 1024, Count: 3}}}
	e := explicit(r, attribute.NewSet(), time.Time{}, time.Time{})
	want := map[int]uint64{0: 1, 1: 1, 3: 2, 11: 3}
	var total uint64
	for i, n := range e.BucketCounts {
		total += n
		if n != want[i] {
			t.Errorf("bucket %d (to %v) holds %d, want %d", i, e.Bounds[min(i, len(e.Bounds)-1)], n, want[i])
		}
	}
	if total != 7 || e.Count != 7 || e.Sum != 3100 || e.Bounds[3] != 7 || e.Bounds[11] != 2047 {
		t.Errorf("explicit: %+v", e)
	}
	x := exponential(r, attribute.NewSet(), time.Time{}, time.Time{})
	if x.Scale != 0 || x.ZeroCount != 1 || x.PositiveBucket.Offset != 0 || len(x.PositiveBucket.Counts) != 11 ||
		x.PositiveBucket.Counts[0] != 1 || x.PositiveBucket.Counts[2] != 2 || x.PositiveBucket.Counts[10] != 3 || x.Count != 7 {
		t.Errorf("exponential: %+v", x)
	}
}

// TestResource describes this test's own process.
func TestResource(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
	r, err := Resource(os.Getpid(), "cmd", env("OTEL_RESOURCE_ATTRIBUTES", "team=a%2Cb,service.version=1"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]attribute.Value{}
	for _, kv := range r.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	exe, _ := os.Executable()
	host, _ := os.Hostname()
	if m["process.pid"].AsInt64() != int64(os.Getpid()) || m["service.name"].AsString() != m["process.executable.name"].AsString() ||
		!strings.HasSuffix(exe, m["process.executable.name"].AsString()) || m["host.name"].AsString() != host ||
		m["team"].AsString() != "a,b" || m["service.version"].AsString() != "1" || len(m["service.instance.id"].AsString()) != 36 {
		t.Errorf("resource %v", m)
	}
	// Another process's, read twice (qemu-user makes up a process's own start time
	// afresh at each read of its /proc/self/stat).
	id := func() string {
		r, _ := Resource(os.Getppid(), "cmd", env())
		v, _ := r.Set().Value("service.instance.id")
		return v.AsString()
	}
	if a, b := id(), id(); a != b || a == m["service.instance.id"].AsString() {
		t.Errorf("service.instance.id of the parent: %s, then %s (this process: %s)", a, b, m["service.instance.id"].AsString())
	}
	named, _ := Resource(os.Getpid(), "cmd", env("OTEL_SERVICE_NAME", "mine"))
	if v, _ := named.Set().Value("service.name"); v.AsString() != "mine" {
		t.Errorf("service.name with sdtctl's OTEL_SERVICE_NAME: %s", v.AsString())
	}
}
