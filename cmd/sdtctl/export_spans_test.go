//go:build linux

package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/otelcoltest"
)

// TestExport exports otelapp's calls to a real collector over OTLP/HTTP and gRPC, and
// checks what the collector received: span names, nesting, durations against what
// the program measured, attributes, error and panic status, span events, the join with
// the program's own trace through sdt/otelsdt, the resource, and the metrics against
// sdtctl stat's over the same calls.
func TestExport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and programs")
	}
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(strings.ReplaceAll(protocol, "/", "-"), func(t *testing.T) { testExport(t, protocol) })
	}
}

func testExport(t *testing.T, protocol string) {
	col := otelcoltest.Start(t)
	exportEnv(t, col, protocol)
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test,team=gosdt")
	a := startApp(t, []string{"OTEL_SERVICE_NAME=otelapp-svc"}, "serve")
	pid := strconv.Itoa(a.pid)

	exp := runCmd(cmdExport, "-p", pid, appSpec, "otelapp:::", "--flush-timeout", "20s")
	stat := runCmd(cmdStat, "-p", pid, appSpec, "--by", "probe", "--hist", "latency_ns", "--json", "-i", "100ms")
	// The export's trace and count stat, and on return probes its latency stat and the
	// stat command's.
	waitHeld(t, a.pid, "fbt:example.com/otelapp/app::entry", 1, 1)
	waitHeld(t, a.pid, "fbt:example.com/otelapp/app::return", 1, 3)
	waitHeld(t, a.pid, "otelapp:::", 1, 1)

	reqs := map[int]map[string]any{}
	for n := 1; n <= 10; n++ {
		reqs[n] = a.do(t, "req "+strconv.Itoa(n))
	}
	work := a.do(t, "work 20")
	a.do(t, "crash 3")
	timed := a.do(t, "timed 7 15")
	a.do(t, "unsampled 104")
	a.do(t, "nocontext 202")

	if err := stat.end(t, 30*time.Second); err != nil {
		t.Fatalf("stat: %v\n%s", err, stat.stderr.String())
	}
	if err := exp.end(t, 60*time.Second); err != nil {
		t.Fatalf("export: %v\n%s", err, exp.stderr.String())
	}
	sum := summaries(t, exp.stderr.String())[a.pid]
	t.Log(sum.line)
	// 10 requests of 4 calls, Work, Crash, Timed and its block, Lookup; the unsampled
	// request's 4 calls are sampled out.
	const wantSpans = 10*4 + 1 + 1 + 2 + 1
	if sum.spans != wantSpans || sum.sampledOut != 4 || sum.processDrops+sum.queueDrops+sum.failed != 0 || sum.spanEvents != 10 {
		t.Errorf("summary %s: want %d spans, 4 sampled out, nothing dropped, 10 span events", sum.line, wantSpans)
	}

	spans, ok := col.WaitSpans(30*time.Second, func(s []otelcoltest.Span) bool { return len(s) >= wantSpans })
	if !ok || len(spans) != wantSpans {
		t.Fatalf("the collector has %d spans, want %d", len(spans), wantSpans)
	}
	byID := map[string]*otelcoltest.Span{}
	for i := range spans {
		byID[spans[i].SpanID] = &spans[i]
	}
	find := func(name string, n int64) *otelcoltest.Span {
		t.Helper()
		for i := range spans {
			if s := &spans[i]; s.Name == name && s.Attrs["gosdt.arg.n"] == n {
				return s
			}
		}
		return nil
	}

	// The resource is the traced program's.
	host, _ := os.Hostname()
	for k, v := range map[string]any{"service.name": "otelapp-svc", "process.pid": int64(a.pid), "process.executable.name": "otelapp",
		"host.name": host, "deployment.environment.name": "test", "team": "gosdt"} {
		if got := spans[0].Resource[k]; got != v {
			t.Errorf("resource %s = %v, want %v (%v)", k, got, v, spans[0].Resource)
		}
	}
	if id, _ := spans[0].Resource["service.instance.id"].(string); len(id) != 36 {
		t.Errorf("service.instance.id %q, want a UUID", id)
	}

	src, _ := filepath.Abs("testdata/otelapp/app/app.go")
	handleLine := lineOf(t, src, "func Handle(")
	for n := 1; n <= 10; n++ {
		res := reqs[n]
		h := find("app.Handle", int64(n))
		if h == nil {
			t.Fatalf("no app.Handle span of request %d", n)
		}
		// Joined to the program's span: its trace, the program's span its parent.
		if h.TraceID != res["trace_id"] || h.ParentSpanID != res["span_id"] {
			t.Errorf("request %d: app.Handle in trace %s under %s, want the program's trace %s under its span %s",
				n, h.TraceID, h.ParentSpanID, res["trace_id"], res["span_id"])
		}
		if d, measured := h.Duration(), time.Duration(res["ns"].(float64)); d <= 0 || d > measured {
			t.Errorf("request %d: app.Handle lasted %v, the program measured %v around the call", n, d, measured)
		}
		for _, child := range []string{"app.Lookup", "app.Work", "app.Check"} {
			c := find(child, int64(n))
			if child == "app.Work" {
				c = nil
				for i := range spans {
					if s := &spans[i]; s.Name == child && s.ParentSpanID == h.SpanID {
						c = s
					}
				}
			}
			if c == nil || c.ParentSpanID != h.SpanID || c.TraceID != h.TraceID {
				t.Errorf("request %d: %s is not a child of its app.Handle span: %+v", n, child, c)
				continue
			}
			if c.Start.Before(h.Start) || c.End.After(h.End) {
				t.Errorf("request %d: %s [%v, %v] is not inside app.Handle [%v, %v]", n, child, c.Start, c.End, h.Start, h.End)
			}
		}
		if h.Attrs["code.function"] != "Handle" || h.Attrs["code.namespace"] != "example.com/otelapp/app" ||
			h.Attrs["code.filepath"] != src || h.Attrs["code.lineno"] != int64(handleLine) {
			t.Errorf("request %d: code attributes %v, want Handle, example.com/otelapp/app, %s:%d", n, h.Attrs, src, handleLine)
		}
		if h.Attrs["gosdt.result.r0"] != "key-"+strconv.Itoa(n) {
			t.Errorf("request %d: result r0 %v, want key-%d", n, h.Attrs["gosdt.result.r0"], n)
		}
		if _, ok := h.Attrs["gosdt.arg.ctx"]; ok {
			t.Errorf("request %d: the context that joined the trace is an attribute too: %v", n, h.Attrs)
		}
		// The probe fired inside Handle is an event of its span (and an error is an
		// exception event).
		wantEvents := 1
		if n%5 == 0 {
			wantEvents = 2
		}
		if len(h.Events) != wantEvents || !strings.HasSuffix(h.Events[0].Name, ":app.Handle:item") || h.Events[0].Attrs["gosdt.arg.key"] != "key-"+strconv.Itoa(n) ||
			h.Events[0].Time.Before(h.Start) || h.Events[0].Time.After(h.End) {
			t.Errorf("request %d: events %+v, want item with key-%d inside the span", n, h.Events, n)
		}
		if n%5 == 0 && (h.Events[1].Name != "exception" || h.Events[1].Attrs["exception.message"] != res["err"]) {
			t.Errorf("request %d: events %+v, want an exception with the error's text", n, h.Events)
		}
		check := find("app.Check", int64(n))
		if n%5 == 0 {
			msg := "n " + strconv.Itoa(n) + " is a multiple of 5"
			if check.StatusCode != 2 || check.StatusMsg != msg || h.StatusCode != 2 || h.StatusMsg != msg || res["err"] != msg {
				t.Errorf("request %d: status of Check %d %q, of Handle %d %q; want error %q", n, check.StatusCode, check.StatusMsg, h.StatusCode, h.StatusMsg, msg)
			}
		} else if check.StatusCode != 0 || h.StatusCode != 0 {
			t.Errorf("request %d: error status on calls that returned no error", n)
		}
	}
	// Work's duration against the program's measure.
	var w *otelcoltest.Span
	for i := range spans {
		if s := &spans[i]; s.Name == "app.Work" && s.ParentSpanID == "" {
			w = s
		}
	}
	if w == nil {
		t.Fatal("no span of the Work called on its own")
	}
	if d, measured := w.Duration(), time.Duration(work["ns"].(float64)); d < 20*time.Millisecond || d > measured {
		t.Errorf("app.Work(20ms) lasted %v; the program measured %v around it", d, measured)
	}
	if c := find("app.Crash", 3); c == nil || c.StatusCode != 2 || c.StatusMsg != "panic" {
		t.Errorf("app.Crash: %+v, want an error status: panic", c)
	}
	// The latency probe's block: a span of its own inside Timed's.
	var block, outer *otelcoltest.Span
	for i := range spans {
		s := &spans[i]
		if s.Name == "app.Timed" && strings.HasSuffix(stringAttr(s, "gosdt.probe"), ":block") {
			block = s
		} else if s.Name == "app.Timed" {
			outer = s
		}
	}
	if block == nil || outer == nil || block.ParentSpanID != outer.SpanID || block.Duration() < 15*time.Millisecond ||
		block.Duration() > time.Duration(timed["ns"].(float64)) || block.Attrs["gosdt.arg.n"] != int64(7) {
		t.Errorf("latency probe block: %+v in %+v; want 15 ms or more, n=7, inside app.Timed", block, outer)
	}
	if find("app.Handle", 104) != nil {
		t.Error("the request its program did not sample was exported")
	}
	if l := find("app.Lookup", 202); l == nil || l.ParentSpanID != "" || l.Attrs["gosdt.arg.ctx"] != "context.Context" {
		t.Errorf("Lookup with a context that holds no span: %+v, want a root span", l)
	}

	checkMetrics(t, col, stat.stdout.String())
}

func stringAttr(s *otelcoltest.Span, k string) string {
	v, _ := s.Attrs[k].(string)
	return v
}

// checkMetrics compares the metrics the collector received last with sdtctl stat's
// last snapshot over the same fires: counts, sums, bounds and buckets.
func checkMetrics(t *testing.T, col *otelcoltest.Collector, statJSON string) {
	t.Helper()
	var last *ctlproto.Stat
	for _, line := range strings.Split(strings.TrimSpace(statJSON), "\n") {
		var m struct{ Stat *ctlproto.Stat }
		if err := json.Unmarshal([]byte(line), &m); err == nil && m.Stat != nil {
			last = m.Stat
		}
	}
	if last == nil || len(last.Rows) == 0 {
		t.Fatalf("no stat snapshot in %q", statJSON)
	}
	latest := func(pts []otelcoltest.Point, metric, probe string) *otelcoltest.Point {
		var p *otelcoltest.Point
		for i := range pts {
			if pts[i].Metric == metric && pts[i].Attrs["gosdt.probe"] == probe && (p == nil || !pts[i].Time.Before(p.Time)) {
				p = &pts[i]
			}
		}
		return p
	}
	pts, ok := col.WaitMetrics(30*time.Second, func(pts []otelcoltest.Point) bool {
		for _, r := range last.Rows {
			if p := latest(pts, "gosdt.probe.latency", r.Key); p == nil || p.Count != uint64(r.Count) {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Errorf("the collector's latency histograms do not reach stat's counts %+v", last.Rows)
	}
	for _, r := range last.Rows {
		p := latest(pts, "gosdt.probe.latency", r.Key)
		if p == nil {
			t.Errorf("no gosdt.probe.latency of %s", r.Key)
			continue
		}
		if p.Kind != "histogram" || p.Unit != "ns" || p.Temporality != 2 || p.Count != uint64(r.Count) || p.Sum != float64(r.Sum) ||
			p.Min == nil || *p.Min != float64(r.Min) || p.Max == nil || *p.Max != float64(r.Max) {
			t.Errorf("%s: exported %s count %d sum %v min %v max %v; stat says count %d sum %d min %d max %d",
				r.Key, p.Kind, p.Count, p.Sum, p.Min, p.Max, r.Count, r.Sum, r.Min, r.Max)
		}
		// Bucket k+1 holds stat's bucket [2^k, 2^(k+1)), bucket 0 the zeros.
		want := make([]uint64, len(p.Buckets))
		for _, b := range r.Hist {
			i := 0
			if b.Low > 0 {
				i = int(math.Log2(float64(b.Low))) + 1
			}
			want[min(i, len(want)-1)] += b.Count
		}
		for i := range want {
			if want[i] != p.Buckets[i] {
				t.Errorf("%s: buckets %v (bounds %v), stat's %v", r.Key, p.Buckets, p.Bounds, r.Hist)
				break
			}
		}
		// Fires of the return probe, and of its entry: the same calls.
		for _, probe := range []string{r.Key, strings.TrimSuffix(r.Key, ":return") + ":entry"} {
			if !strings.HasSuffix(r.Key, ":return") && probe != r.Key {
				continue
			}
			if f := latest(pts, "gosdt.probe.fires", probe); f == nil || f.Value != float64(r.Count) || !f.Monotonic {
				t.Errorf("gosdt.probe.fires of %s: %+v, want %d", probe, f, r.Count)
			}
		}
	}
	if d := latest(pts, "gosdt.export.dropped", ""); d != nil {
		t.Errorf("drops named by probe: %+v", d)
	}
}
