//go:build amd64 || arm64

package patch

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var sink atomic.Pointer[[]byte]

// TestTorture toggles the site while goroutines execute it, the garbage collector runs
// constantly and async preemption interrupts everyone.
func TestTorture(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		for _, p := range []Protocol{Atomic, Rendezvous} {
			t.Run(fmt.Sprintf("%v/procs=%d", p, procs), func(t *testing.T) {
				torture(t, p, procs)
			})
		}
	}
}

func torture(t *testing.T, p Protocol, procs int) {
	toggles := 100000
	if p == Rendezvous {
		toggles = 1000
	}
	if testing.Short() || raceEnabled {
		toggles /= 20
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	resetSite(t)

	var stop atomic.Bool
	var wg sync.WaitGroup
	var calls, ones atomic.Int64
	for range 8 {
		wg.Go(func() {
			var n, o int64
			for !stop.Load() {
				switch testTarget() {
				case 0:
				case 1:
					o++
				default:
					t.Error("testTarget returned neither 0 nor 1")
					return
				}
				n++
				if n%256 == 0 {
					// Real goroutines block and call into the scheduler; a loop
					// that spends nearly all its time in an assembly function is
					// all but unpreemptible, and that case is TestRendezvousBacksOut's.
					runtime.Gosched()
				}
			}
			calls.Add(n)
			ones.Add(o)
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			b := make([]byte, 64<<10)
			sink.Store(&b)
		}
	})

	// Every toggle must succeed, however busy the Ps: the rendezvous is a stop-the-world
	// (rendezvous_linux.go), which preempts what runs. The budget bounds the test's time.
	start := time.Now()
	budget := 8 * time.Second
	if testing.Short() || raceEnabled {
		budget = 3 * time.Second
	}
	o := Options{Protocol: p}
	var attempts, done int
	for done < toggles && time.Since(start) < budget {
		rep, err := setSite(done%2 == 0, len(siteOn), o)
		attempts += rep.Attempts
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("toggle %d: %v", done, err)
		}
		done++
		if done%64 == 0 {
			runtime.Gosched() // with GOMAXPROCS=1, let the callers run too
		}
	}
	stop.Store(true)
	wg.Wait()
	if done == 0 {
		t.Errorf("no toggle done in %v", budget)
	}
	t.Logf("%d toggles in %v (%d rendezvous attempts), %d calls (%d saw the NOP)",
		done, time.Since(start).Round(time.Millisecond), attempts, calls.Load(), ones.Load())
	checkRX(t)
}
