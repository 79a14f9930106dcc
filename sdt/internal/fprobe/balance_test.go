package fprobe

import (
	"runtime"
	"sync"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// TestReturnsNeverExceedEntries places and removes entry and return probes 1,000 times
// while goroutines call the functions (one of them blocks inside its function, so calls
// are in flight at every placement): per function, the returns counted never exceed the
// entries counted plus the calls in flight when the probes were placed, and the returns
// that carry an entry time never exceed the entries.
func TestReturnsNeverExceedEntries(t *testing.T) {
	names := []string{"Small", "Large", "Wait"}
	var fs []*Func
	for _, n := range names {
		f := lookup(t, n)
		if err := f.ReturnErr(); err != nil {
			t.Skipf("%s: %v", n, err)
		}
		fs = append(fs, f)
	}
	cycles := 1000
	if testing.Short() {
		cycles = 100
	}
	stop := make(chan struct{})
	ch := make(chan int)
	var wg sync.WaitGroup
	work := func(i int, call func(k int)) {
		defer wg.Done()
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			call(k)
		}
	}
	wg.Add(4)
	go work(0, func(k int) {
		var a [64]int
		if target.Small(&a, "hi", k) != k+2+2*k+k {
			panic("Small returned a wrong value")
		}
	})
	go work(1, func(k int) {
		x := k
		if p, _ := target.Large(&x, false, 1); p != &x {
			panic("Large returned a wrong value")
		}
	})
	go work(2, func(k int) {
		if r := target.Wait(ch, k); r != k+1 && (r != k || !closed(stop)) { // k: ch closed at the end
			panic("Wait returned a wrong value")
		}
	})
	go func() { // feeds Wait, so that its calls last
		defer wg.Done()
		for {
			select {
			case <-stop:
				close(ch)
				return
			case ch <- 1:
			}
			runtime.Gosched()
		}
	}()
	before := make([]Stats, len(fs))
	for i, f := range fs {
		drainAll(f)
		before[i] = f.Stats()
	}
	var read [3]int64  // return events read
	var timed [3]int64 // of them, with an entry time
	inFlight := [3]int64{}
	buf := make([]Return, 256)
	readAll := func() {
		for i, f := range fs {
			for {
				n := f.ReadReturns(buf)
				if n == 0 {
					break
				}
				read[i] += int64(n)
				for _, e := range buf[:n] {
					if e.Latency >= 0 {
						timed[i]++
					}
				}
			}
		}
	}
	count := func(*Func, *Args) {}
	for c := 0; c < cycles; c++ {
		var on []Change
		for _, f := range fs {
			on = append(on, Change{Func: f, Entry: count, Return: true, Pinned: c%2 == 0})
		}
		if err := Set(on); err != nil {
			t.Fatal(err)
		}
		for i := range fs {
			// One goroutine calls each function: at most one of its calls is in
			// flight when the probes are placed.
			inFlight[i]++
		}
		readAll()
		var off []Change
		for _, f := range fs {
			off = append(off, Change{Func: f})
		}
		if err := Set(off); err != nil {
			t.Fatal(err)
		}
		readAll()
	}
	close(stop)
	wg.Wait()
	readAll()
	for i, f := range fs {
		st := f.Stats()
		entries, returns := st.Entries-before[i].Entries, st.Returns-before[i].Returns
		dropped := st.Dropped - before[i].Dropped
		t.Logf("%s: %d entries, %d returns (%d with an entry time), %d read, %d dropped, at most %d in flight at placements",
			names[i], entries, returns, timed[i], read[i], dropped, inFlight[i])
		if returns > entries+inFlight[i] {
			t.Errorf("%s: %d returns > %d entries + %d calls in flight at placements", names[i], returns, entries, inFlight[i])
		}
		if timed[i] > entries {
			t.Errorf("%s: %d returns with an entry time > %d entries", names[i], timed[i], entries)
		}
		if read[i]+dropped != returns {
			t.Errorf("%s: %d read + %d dropped != %d returns", names[i], read[i], dropped, returns)
		}
		if entries == 0 || returns == 0 {
			t.Errorf("%s: no event (%d entries, %d returns)", names[i], entries, returns)
		}
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
