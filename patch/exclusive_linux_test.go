//go:build amd64 || arm64

package patch

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/patch/internal/spin"
)

// TestRendezvousExcludesEveryP holds one of two Ps in an assembly loop that never reaches
// a preemption point, for a bounded time. The rendezvous must not write while that P
// runs Go code: it waits until the loop returns, then writes, and the text is RX again.
// (The loop's end cannot be timed from Go: the goroutine stops at the first preemption
// point after it. So the test checks that the write came after most of the loop's
// length; without exclusion it would come within a millisecond or so.)
func TestRendezvousExcludesEveryP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	resetSite(t)

	// Calibrate: how many spin iterations last about 100ms on this CPU (PAUSE and YIELD
	// take from a few to ~140 cycles depending on the core).
	var never uint32
	const probe = 1 << 20
	spin.WhileLess(&never, 1, probe) // once untimed: an emulator translates it the first time
	t0 := time.Now()
	spin.WhileLess(&never, 1, probe)
	iters := uint64(float64(probe) * float64(100*time.Millisecond) / float64(max(time.Since(t0), time.Microsecond)))

	var loopStart, loopEnd, wrote atomic.Int64
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		loopStart.Store(time.Now().UnixNano())
		close(started)
		spin.WhileLess(&never, 1, iters) // no preemption point inside
		loopEnd.Store(time.Now().UnixNano())
		close(done)
	}()
	<-started
	time.Sleep(5 * time.Millisecond) // let the loop start on the other P

	testHookWritable = func() error { wrote.Store(time.Now().UnixNano()); return nil }
	defer func() { testHookWritable = nil }()
	rep, err := setSite(true, len(siteOn), Options{Protocol: Rendezvous})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	<-done
	if rep.Protocol != Rendezvous || rep.Attempts != 1 {
		t.Errorf("report %+v, want one rendezvous attempt", rep)
	}
	// The loop's end as the goroutine saw it is at or after its real end (it may be
	// descheduled in between, by the rendezvous itself): a write that waited comes
	// after most of it; one that did not, within the 5ms the test slept and a little.
	after, loop := time.Duration(wrote.Load()-loopStart.Load()), time.Duration(loopEnd.Load()-loopStart.Load())
	if wrote.Load() == 0 || after < loop/2 || after < 20*time.Millisecond {
		t.Errorf("wrote %v after a non-preemptible loop of %v began: it did not wait for that P", after, loop)
	} else {
		t.Logf("wrote %v after the non-preemptible loop of %v began", after, loop)
	}
	if got := text(testTargetAddr(), len(siteOn)); !bytes.Equal(got, siteOn) {
		t.Errorf("site holds % x, want % x", got, siteOn)
	}
	checkRX(t)
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS = %d after the rendezvous, want 2", got)
	}
	resetSite(t)
}
