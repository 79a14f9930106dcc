//go:build linux

package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tracesOnly is an OTLP/HTTP endpoint that takes spans (each after delay) and answers
// metrics 404, as Jaeger does.
func tracesOnly(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int64) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		posts.Add(1)
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
	return srv, &posts
}

// TestExportTracesOnlyBackend: a backend that answers metrics 404 is said once, with
// the fix, and is no failure: the spans arrive and export exits 0.
func TestExportTracesOnlyBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a program")
	}
	_, posts := tracesOnly(t, 0)
	l := startLoop(t, 10000000)
	exp := runCmd(cmdExport, "-p", strconv.Itoa(l.pid), appSpec, "--flush-timeout", "5s")
	waitHeld(t, l.pid, appSpec, 1, 1)
	time.Sleep(1500 * time.Millisecond)
	err := exp.end(t, 60*time.Second)
	stderr := exp.stderr.String()
	t.Logf("%v\n%s", err, stderr)
	if n := strings.Count(stderr, "the endpoint takes no metrics"); n != 1 || !strings.Contains(stderr, "OTEL_METRICS_EXPORTER=none") {
		t.Errorf("the 404 on metrics said %d times, want once with the fix", n)
	}
	if posts.Load() == 0 {
		t.Error("no span reached the endpoint")
	}
	s := summaries(t, stderr)[l.pid]
	if s.processDrops+s.queueDrops+s.failed == 0 && err != nil {
		t.Errorf("export with every span delivered: %v (exit %d), want exit 0", err, exitCode(err))
	}
}

// TestExportDropsExit1: spans dropped in the exporter's queue (a queue of 16 before a
// slow endpoint) make export exit 1, saying where they were dropped.
func TestExportDropsExit1(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a program")
	}
	tracesOnly(t, 300*time.Millisecond)
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "16")
	l := startLoop(t, 100000)
	exp := runCmd(cmdExport, "-p", strconv.Itoa(l.pid), appSpec, "--flush-timeout", "2s")
	waitHeld(t, l.pid, appSpec, 1, 1)
	time.Sleep(1500 * time.Millisecond)
	err := exp.end(t, 60*time.Second)
	t.Logf("%v\n%s", err, exp.stderr.String())
	if exitCode(err) != exitError || !strings.Contains(err.Error(), "dropped in the exporter's queue") || strings.Contains(err.Error(), "metric exports failed") {
		t.Errorf("export with spans dropped in the queue: %v (exit %d), want exit 1 saying where, metrics' 404 not a failure", err, exitCode(err))
	}
}
