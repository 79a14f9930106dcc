package fprobe

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReturnQuiet: with the returns folded (SetReturnQuiet), every call that returns
// is counted and folded, with its latency, and nothing goes into a ring; switched
// between folded and put while goroutines call, each return is one or the other:
// events read + dropped + folded = returns, exactly. GOMAXPROCS 1, 2 and 8.
func TestReturnQuiet(t *testing.T) {
	for _, procs := range []int{1, 2, 8} {
		for _, name := range []string{"Small", "Panicky", "Large"} {
			t.Run(fmt.Sprint(name, "/GOMAXPROCS=", procs), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				testReturnQuiet(t, name)
			})
		}
	}
}

func testReturnQuiet(t *testing.T, name string) {
	f := lookup(t, name)
	buf := make([]Return, ringSize)
	drain := func() (n int) {
		for {
			m := f.ReadReturns(buf)
			if m == 0 {
				return n
			}
			for _, e := range buf[:m] {
				if e.Latency < 0 {
					t.Errorf("event without latency: %+v", e)
				}
			}
			n += m
		}
	}
	drain()
	before, fbefore := f.Stats(), f.Folded()
	f.SetReturnQuiet(true)
	defer f.SetReturnQuiet(false)
	if err := f.SetReturn(true); err != nil {
		t.Fatal(err)
	}
	const G, N = 4, 3000
	var calls, panics atomic.Int64
	run := func() {
		var wg sync.WaitGroup
		for range G {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, c := 0, 0
				for i := range N {
					c += call(t, name, i, &p)
					if i%500 == 0 {
						runtime.GC() // stacks scanned, perhaps moved, between calls
					}
				}
				calls.Add(int64(c))
				panics.Add(int64(p))
			}()
		}
		wg.Wait()
	}

	// Folded only.
	run()
	st, fo := f.Stats(), f.Folded()
	returned := calls.Load() - panics.Load()
	if got := st.Returns - before.Returns; got != returned {
		t.Errorf("%d returns counted for %d calls that returned", got, returned)
	}
	if got := fo.Returns - fbefore.Returns; got != returned {
		t.Errorf("%d returns folded for %d calls that returned", got, returned)
	}
	if got, want := fo.Count-fbefore.Count, returned-(st.NoEntry-before.NoEntry); got != want {
		t.Errorf("%d latencies folded, want %d (returns less those without an entry time)", got, want)
	}
	if st.NoEntry != before.NoEntry {
		t.Errorf("%d returns without their entry time", st.NoEntry-before.NoEntry)
	}
	if n := drain(); n != 0 {
		t.Errorf("%d events in the rings while the returns were folded", n)
	}
	if fo.Count > 0 && (fo.Min < 0 || fo.Min > fo.Max || fo.Sum < fo.Min*fo.Count || fo.Sum > fo.Max*fo.Count) {
		t.Errorf("fold inconsistent: %+v", fo)
	}

	// Switched back and forth while called.
	stop := make(chan struct{})
	var sw sync.WaitGroup
	sw.Add(1)
	read := 0
	go func() {
		defer sw.Done()
		q := false
		for {
			select {
			case <-stop:
				return
			default:
			}
			f.SetReturnQuiet(q)
			q = !q
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var rd sync.WaitGroup
	rdStop := make(chan struct{})
	rd.Add(1)
	go func() {
		defer rd.Done()
		for {
			read += drain()
			select {
			case <-rdStop:
				return
			default:
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
	calls.Store(0)
	panics.Store(0)
	st0, fo0 := f.Stats(), f.Folded()
	run()
	close(stop)
	sw.Wait()
	if err := f.SetReturn(false); err != nil {
		t.Fatal(err)
	}
	close(rdStop)
	rd.Wait()
	read += drain()
	st, fo = f.Stats(), f.Folded()
	returned = calls.Load() - panics.Load()
	rets, dropped, folded := st.Returns-st0.Returns, st.Dropped-st0.Dropped, fo.Returns-fo0.Returns
	if rets != returned {
		t.Errorf("%d returns counted for %d calls that returned", rets, returned)
	}
	if int64(read)+dropped+folded != rets {
		t.Errorf("%d read + %d dropped + %d folded != %d returns", read, dropped, folded, rets)
	}
	t.Logf("%d returns: %d read, %d dropped, %d folded", rets, read, dropped, folded)
}
