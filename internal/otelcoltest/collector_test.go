package otelcoltest

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCollector builds the collector (CI runs it first, to have it cached and to time
// the build), sends it a span and a metric point as OTLP/HTTP JSON, reads them back
// from its files, and checks that it comes back on its ports after a restart.
func TestCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a collector")
	}
	c := Start(t)
	post := func(path, body string) {
		t.Helper()
		resp, err := http.Post(c.Endpoint("http/protobuf")+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %s", path, resp.Status)
		}
	}
	post("/v1/traces", `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"t"}}]},
		"scopeSpans":[{"scope":{"name":"s"},"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",
		"name":"op","kind":1,"startTimeUnixNano":"1000","endTimeUnixNano":"3000",
		"attributes":[{"key":"n","value":{"intValue":"7"}}],"status":{"code":2,"message":"bad"}}]}]}]}`)
	post("/v1/metrics", `{"resourceMetrics":[{"resource":{},"scopeMetrics":[{"metrics":[{"name":"m","unit":"ns",
		"histogram":{"aggregationTemporality":2,"dataPoints":[{"count":"3","sum":6,"bucketCounts":["1","2"],"explicitBounds":[1]}]}}]}]}]}`)
	spans, ok := c.WaitSpans(30*time.Second, func(s []Span) bool { return len(s) == 1 })
	if !ok || spans[0].Name != "op" || spans[0].Duration() != 2000 || spans[0].Attrs["n"] != int64(7) ||
		spans[0].Resource["service.name"] != "t" || spans[0].StatusCode != 2 || spans[0].StatusMsg != "bad" {
		t.Fatalf("spans %+v", spans)
	}
	pts, ok := c.WaitMetrics(30*time.Second, func(p []Point) bool { return len(p) == 1 })
	if !ok || pts[0].Metric != "m" || pts[0].Kind != "histogram" || pts[0].Count != 3 || pts[0].Sum != 6 || len(pts[0].Buckets) != 2 {
		t.Fatalf("points %+v", pts)
	}
	c.Restart()
	if !listening(c.GRPC) || !listening(c.HTTP) {
		t.Error("not listening after a restart")
	}
	c.Stop()
	if listening(c.HTTP) {
		t.Error("still listening after Stop")
	}
}
