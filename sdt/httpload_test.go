package sdt_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sdt"
)

var (
	httpRequest = sdt.Define2[string, int]("httpload", "request", "path", "size")
	httpReply   = sdt.Define2[int, int]("httpload", "reply", "status", "bytes")
)

// TestHTTPUnderLoad runs a real net/http server with probes in its handler path, loads
// it from bounded clients on loopback, and switches the probes on and off many times
// meanwhile: no switch may fail, no request may fail, and the fires seen while the
// probes were on must have been delivered.
func TestHTTPUnderLoad(t *testing.T) {
	sdt.NeedSwitchable(t, "httpload:::")
	toggles := 10_000
	switch {
	case raceEnabled, testing.Short():
		toggles = 1_000
	case testutil.Emulated():
		toggles = 2_000
	}
	if v := os.Getenv("SDT_HTTP_TOGGLES"); v != "" {
		fmt.Sscan(v, &toggles)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sdt.Probe2(&httpRequest, r.URL.Path, len(body))
		n, _ := fmt.Fprintf(w, "hello %s\n", r.URL.Path)
		sdt.Probe2(&httpReply, http.StatusOK, n)
	}))
	defer srv.Close()

	var fired atomic.Int64
	defer httpRequest.Attach(func(string, int) { fired.Add(1) })()
	defer httpReply.Attach(func(int, int) { fired.Add(1) })()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const clients = 4
	var ok, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	for c := range clients {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/c%d/%d", srv.URL, c, i), nil)
				resp, err := client.Do(req)
				if ctx.Err() != nil {
					return // the test is over: a request cut short now is ours, not a failure
				}
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %s", resp.Status)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				ok.Add(1)
			}
		})
	}

	lat := make([]time.Duration, 0, toggles)
	var switchErrs int
	start := time.Now()
	for i := range toggles {
		t0 := time.Now()
		var err error
		if i%2 == 0 {
			_, err = sdt.Enable("httpload:::")
		} else {
			_, err = sdt.Disable("httpload:::")
		}
		lat = append(lat, time.Since(t0))
		if err != nil {
			switchErrs++
			if switchErrs == 1 {
				t.Errorf("switch %d: %v", i, err)
			}
		}
		if i%50 == 0 {
			time.Sleep(100 * time.Microsecond) // let requests through in both states
		}
	}
	elapsed := time.Since(start)
	if _, err := sdt.Disable("httpload:::"); err != nil {
		t.Error(err)
	}
	cancel()
	wg.Wait()

	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	t.Logf("%d switches in %v: one switch p50 %v, p99 %v, max %v; %d requests ok, %d failed, %d fires delivered",
		toggles, elapsed.Round(time.Millisecond), pct(0.50), pct(0.99), lat[len(lat)-1], ok.Load(), failed.Load(), fired.Load())
	if switchErrs > 0 {
		t.Errorf("%d of %d switches failed", switchErrs, toggles)
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d requests failed, the first: %v", n, *firstErr.Load())
	}
	if ok.Load() == 0 || fired.Load() == 0 {
		t.Errorf("%d requests, %d fires: the load or the probes never ran", ok.Load(), fired.Load())
	}
}
