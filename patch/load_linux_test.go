//go:build amd64 || arm64

package patch

import (
	"fmt"
	"runtime"
	"runtime/metrics"
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
// with the default Options. It reports the latency percentiles of Apply (which include
// the caller's own waits for a P), how many Applies failed or needed more than one
// attempt (retries), the percentiles of gathering (the call that leaves one P, which
// includes the caller's wait for the garbage collector and for a P if it is preempted
// before the world stops), of the runtime's own time to stop the world in non-GC
// stop-the-worlds (stop-*: runtime/metrics, to its histogram's bucket precision), and of
// the time the program then ran on one P (1P-*), which the rest of the program pays.
// gather and 1P are upper bounds: they run from one goroutine's note of an event to
// another's, and either may be preempted (at full GOMAXPROCS) before it notes. The exact
// times on one P are in an execution trace (-trace): the /sched/gomaxprocs:threads
// metric events.
//
// The spinner rendezvous this package used before failed here every time: 40 of 40 at
// GOMAXPROCS 2 and 8 (see rendezvous_linux.go for why, and the figures).
func BenchmarkRendezvousUnderLoad(b *testing.B) {
	for _, procs := range []int{2, 8} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			resetSite(b)
			stop := fullLoad(procs)
			defer stop()
			var lat, gather, oneP []time.Duration
			testHookRendezvous = func(g, d time.Duration) { gather, oneP = append(gather, g), append(oneP, d) }
			stw := newPauses()
			defer func() { testHookRendezvous = nil }()
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
			slices.Sort(oneP)
			slices.Sort(gather)
			q := func(d []time.Duration, f float64) float64 { return float64(d[int(f*float64(len(d)-1))]) / 1e6 }
			b.ReportMetric(q(lat, 0.5), "p50-ms")
			b.ReportMetric(q(lat, 0.99), "p99-ms")
			b.ReportMetric(q(lat, 1), "max-ms")
			if len(oneP) > 0 {
				b.ReportMetric(q(gather, 0.5), "gather-p50-ms")
				b.ReportMetric(q(gather, 0.99), "gather-p99-ms")
				b.ReportMetric(q(gather, 1), "gather-max-ms")
				b.ReportMetric(q(oneP, 0.5), "1P-p50-ms")
				b.ReportMetric(q(oneP, 1), "1P-max-ms")
			}
			p50, p99, worst := stw.since()
			b.ReportMetric(p50, "stop-p50-ms")
			b.ReportMetric(p99, "stop-p99-ms")
			b.ReportMetric(worst, "stop-max-ms")
			b.ReportMetric(float64(fails), "fails")
			b.ReportMetric(float64(retries), "retries")
		})
	}
}

// pauses reads the runtime's histogram of the time non-GC stop-the-worlds took to stop
// every P, so that a benchmark can report the distribution over its own run.
type pauses struct{ before *metrics.Float64Histogram }

const stoppingOther = "/sched/pauses/stopping/other:seconds"

func readStopping() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: stoppingOther}}
	metrics.Read(s)
	return s[0].Value.Float64Histogram()
}

func newPauses() pauses { return pauses{readStopping()} }

// since returns the p50, p99 and max (each as its bucket's upper bound, in ms) of the
// stops recorded since newPauses.
func (p pauses) since() (p50, p99, worst float64) {
	now := readStopping()
	var counts []uint64
	var total uint64
	for i := range now.Counts {
		c := now.Counts[i] - p.before.Counts[i]
		counts = append(counts, c)
		total += c
	}
	if total == 0 {
		return 0, 0, 0
	}
	at := func(f float64) float64 {
		want, seen := uint64(f*float64(total-1))+1, uint64(0)
		for i, c := range counts {
			if seen += c; seen >= want {
				return now.Buckets[i+1] * 1e3
			}
		}
		return now.Buckets[len(now.Buckets)-1] * 1e3
	}
	return at(0.5), at(0.99), at(1)
}

// TestRendezvousUnderLoad runs rendezvous toggles with every P saturated by goroutines
// that never block, allocate or yield, at GOMAXPROCS 2 and 8: every one must succeed
// without its caller seeing a failure and leave GOMAXPROCS as it was. An attempt whose
// caller was preempted before it could pin itself is given up and retried inside Apply
// (rendezvousOnce); that is the protocol working, so retries are counted, not failed.
func TestRendezvousUnderLoad(t *testing.T) {
	n := 100
	if testing.Short() || raceEnabled {
		n = 20
	}
	for _, procs := range []int{2, 8} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			resetSite(t)
			stop := fullLoad(procs)
			defer stop()
			var gather, oneP []time.Duration
			testHookRendezvous = func(g, d time.Duration) { gather, oneP = append(gather, g), append(oneP, d) }
			defer func() { testHookRendezvous = nil }()
			retried := 0
			for i := range n {
				rep, err := setSite(i%2 == 0, len(siteOn), Options{Protocol: Rendezvous})
				if err != nil {
					t.Fatalf("toggle %d: %v", i, err)
				}
				if rep.Attempts < 1 {
					t.Fatalf("toggle %d: %d attempts: the rendezvous did not run", i, rep.Attempts)
				}
				if rep.Attempts > 1 {
					retried++
				}
				if got := runtime.GOMAXPROCS(0); got != procs {
					t.Fatalf("toggle %d: GOMAXPROCS %d after the rendezvous, want %d", i, got, procs)
				}
			}
			if want := n + retried; len(oneP) < want {
				t.Errorf("%d attempts reported to the hook, want at least %d", len(oneP), want)
			}
			slices.Sort(gather)
			slices.Sort(oneP)
			t.Logf("%d rendezvous, %d retried; gather: p50 %v, max %v; time on one P: p50 %v, max %v",
				n, retried, gather[len(gather)/2], gather[len(gather)-1], oneP[len(oneP)/2], oneP[len(oneP)-1])
			checkRX(t)
		})
	}
}
