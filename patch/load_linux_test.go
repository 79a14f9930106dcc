//go:build amd64 || arm64

package patch

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// spinSink keeps the busy loops' counters alive so the compiler cannot drop the loops.
var spinSink atomic.Uint64

// fullLoad occupies every P with goroutines that never block, never allocate and never
// yield: tight Go loops without calls (only async preemption stops them) and loops
// around the test target. It returns a function that stops them and waits.
func fullLoad(procs int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 2 * procs {
		wg.Go(func() {
			var x uint64
			for !done.Load() {
				x++
			}
			spinSink.Add(x)
		})
		wg.Go(func() {
			var x uint64
			for !done.Load() {
				x += testTarget()
			}
			spinSink.Add(x)
		})
	}
	time.Sleep(20 * time.Millisecond) // let them spread over every P
	return func() { done.Store(true); wg.Wait() }
}

// BenchmarkRendezvousUnderLoad measures one Rendezvous-protocol Apply (one toggle of the
// test site) with every P saturated by goroutines that never block, allocate or yield,
// with the default Options. It reports the latency percentiles and how many Applies
// failed (timeouts, after every attempt) or needed more than one attempt (retries).
//
// Why it fails today (issue 10, measured on a 2-vCPU Intel Xeon, go1.26.8): with 8 busy
// goroutines at GOMAXPROCS 2, a single 50ms attempt mostly sees 0 spinners arrive. A spinner's
// first Gosched puts it at the tail of the global run queue, behind every busy goroutine a
// sysmon preemption (every ~10ms) has put there, and busy Ps look at the global queue only
// when their local queue (refilled in batches from the global one) is empty; a spinner that
// loses patience (1ms) yields back to the tail. Without patience and with 4n spinners a 1s
// attempt does gather, but in 80-135ms at GOMAXPROCS 2 and 200-460ms at 8 (1 timeout in
// 8), which is ~10ms times the busy goroutines queued ahead per unpinned P.
func BenchmarkRendezvousUnderLoad(b *testing.B) {
	for _, procs := range []int{2, 8} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			resetSite(b)
			stop := fullLoad(procs)
			defer stop()
			var lat []time.Duration
			var fails, retries int
			o := Options{Protocol: Rendezvous}
			on := true
			for b.Loop() {
				t0 := time.Now()
				rep, err := setSite(on, len(siteOn), o)
				lat = append(lat, time.Since(t0))
				if err != nil {
					fails++
					continue
				}
				if rep.Attempts > 1 {
					retries++
				}
				on = !on
			}
			slices.Sort(lat)
			q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(q(1), "max-ms")
			b.ReportMetric(float64(fails), "fails")
			b.ReportMetric(float64(retries), "retries")
		})
	}
}
