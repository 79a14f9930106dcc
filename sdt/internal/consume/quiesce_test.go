package consume

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	_ "unsafe" // go:linkname

	"github.com/gosdt/gosdt/sdt/internal/rt"
)

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// TestQuiesceWaitsForPinned: quiesce does not return while a goroutine that was
// pinned to its P when it was called (as a fire delivering to a sink is) has not
// unpinned. The guard of the unmapping of trace buffers, and of the runtime
// behaviour it rests on (runtime.Stack's stop-the-world).
func TestQuiesceWaitsForPinned(t *testing.T) {
	for range 5 {
		var pinned, unpinned atomic.Bool
		go func() {
			procPin()
			pinned.Store(true)
			for start := rt.Nanotime(); rt.Nanotime()-start < int64(20*time.Millisecond); {
			}
			unpinned.Store(true)
			procUnpin()
		}()
		for !pinned.Load() {
			time.Sleep(time.Microsecond)
		}
		quiesce()
		if !unpinned.Load() {
			t.Fatal("quiesce returned while a goroutine was still pinned")
		}
	}
}

// BenchmarkQuiesce is the stop-the-world a trace's end costs where its buffers are
// unmapped, with a goroutine per P running meanwhile.
func BenchmarkQuiesce(b *testing.B) {
	var stop atomic.Bool
	done := make(chan struct{})
	procs := runtime.GOMAXPROCS(0)
	for range procs {
		go func() {
			for x := 0; !stop.Load(); x++ {
				if x%1024 == 0 {
					runtime.Gosched()
				}
			}
			done <- struct{}{}
		}()
	}
	for b.Loop() {
		quiesce()
	}
	stop.Store(true)
	for range procs {
		<-done
	}
}
