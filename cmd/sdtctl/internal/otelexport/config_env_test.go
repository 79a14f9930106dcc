package otelexport

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestFromEnvRefuses: a value the SDK's exporters would ignore or misread is refused,
// naming the variable.
func TestFromEnvRefuses(t *testing.T) {
	for _, tc := range [][2]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "::not a url"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://127.0.0.1:21"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:99999"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://x:4317"},
		{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "file:///tmp/x"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "soon"},
		{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "-1"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "%%%==="},
		{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"},
		{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "a b=c"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstdx"},
		{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "br"},
		{"OTEL_EXPORTER_OTLP_INSECURE", "yes please"},
		{"OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem"},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "/dev/null"},
		{"OTEL_RESOURCE_ATTRIBUTES", "team"},
		{"OTEL_RESOURCE_ATTRIBUTES", "a=1,=2"},
		{"OTEL_RESOURCE_ATTRIBUTES", "a=%zz"},
	} {
		env := map[string]string{tc[0]: tc[1]}
		_, err := FromEnv(func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), tc[0]) {
			t.Errorf("%s=%q: %v, want refused naming it", tc[0], tc[1], err)
		}
	}
	for _, tc := range [][2]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example.com:443/prefix"},
		{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=abc%20def, x-tenant=1"},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", "0"},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"},
		{"OTEL_EXPORTER_OTLP_INSECURE", "true"},
		{"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,team=a%20b"},
	} {
		env := map[string]string{tc[0]: tc[1]}
		if _, err := FromEnv(func(k string) string { return env[k] }); err != nil {
			t.Errorf("%s=%q: %v", tc[0], tc[1], err)
		}
	}
}

// TestDefaultEndpointIsHTTP: with no endpoint set, spans go to http://localhost:4318,
// the specification's default, not https.
func TestDefaultEndpointIsHTTP(t *testing.T) {
	l, err := net.Listen("tcp", "localhost:4318")
	if err != nil {
		t.Skipf("localhost:4318 is taken: %v", err)
	}
	got := make(chan string, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path
		w.WriteHeader(http.StatusOK)
	})}
	go srv.Serve(l)
	defer srv.Close()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_METRICS_INSECURE"} {
		t.Setenv(k, "")
	}
	cfg, err := FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Traces = false
	e, err := NewExporters(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.metrics.Export(ctx, &metricdata.ResourceMetrics{}); err != nil {
		t.Fatalf("export to the default endpoint: %v", err)
	}
	if p := <-got; p != "/v1/metrics" {
		t.Fatalf("path %s", p)
	}
}

// TestNoMetricsReceiver: the HTTP exporter's 404 is a backend without metrics, counted
// apart from failures.
func TestNoMetricsReceiver(t *testing.T) {
	srv := &http.Server{Handler: http.NotFoundHandler()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	exp, err := otlpmetrichttp.New(context.Background(), otlpmetrichttp.WithEndpointURL("http://"+l.Addr().String()+"/v1/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	pm := &processMetrics{Exporter: exp}
	err = pm.Export(context.Background(), &metricdata.ResourceMetrics{})
	if err == nil || !NoMetricsReceiver(err) || pm.failed.Load() != 0 || pm.noReceiver.Load() != 1 {
		t.Fatalf("%v: failed %d, no receiver %d", err, pm.failed.Load(), pm.noReceiver.Load())
	}
}
