package fprobe

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// TestReturnExactCount: N calls while the return probe is on give N return events,
// each with a latency and the results as the caller received them; calls that panic
// give none.
func TestReturnExactCount(t *testing.T) {
	names := []string{"Large", "Panicky", "Small", "Floats"}
	if runtime.GOARCH == "arm64" { // amd64 refuses a huge frame's stack check
		names = append(names, "Huge")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			f := lookup(t, name)
			before := f.Stats()
			if err := f.SetReturn(true); err != nil {
				t.Fatal(err)
			}
			const G, N = 4, 5000
			var wg sync.WaitGroup
			var mu sync.Mutex
			panics, calls := 0, 0
			for g := 0; g < G; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, c := 0, 0
					for i := 0; i < N; i++ {
						c += call(t, name, i, &p)
					}
					mu.Lock()
					panics += p
					calls += c
					mu.Unlock()
				}()
			}
			wg.Wait()
			if err := f.SetReturn(false); err != nil {
				t.Fatal(err)
			}
			call(t, name, 1, new(int))
			buf := make([]Return, ringSize)
			var evs []Return
			for {
				n := f.ReadReturns(buf)
				if n == 0 {
					break
				}
				evs = append(evs, buf[:n]...)
			}
			st := f.Stats()
			st.Returns -= before.Returns
			st.NoEntry -= before.NoEntry
			st.Dropped -= before.Dropped
			if got, want := st.Returns, int64(calls-panics); got != want {
				t.Errorf("%d return events for %d calls that returned (%d panicked)", got, want, panics)
			}
			if st.NoEntry != 0 {
				t.Errorf("%d returns without their entry time", st.NoEntry)
			}
			if name == "Panicky" && panics == 0 {
				t.Error("no call panicked")
			}
			if int64(len(evs))+st.Dropped != st.Returns {
				t.Errorf("%d events read, %d dropped, %d counted", len(evs), st.Dropped, st.Returns)
			}
			for _, e := range evs {
				if e.Latency < 0 {
					t.Fatalf("event without latency: %+v", e)
				}
			}
		})
	}
}

// call calls the target with argument i and checks what it returns; it returns how
// many calls of the target that made (Floats recurses).
func call(t *testing.T, name string, i int, panics *int) (calls int) {
	calls = 1
	switch name {
	case "Large":
		x := i
		if p, r := target.Large(&x, false, 2.5); p != &x || r != 2 {
			panic("Large returned a wrong value")
		}
	case "Small":
		var arr [64]int
		if r := target.Small(&arr, "hello", i); r != i+5+3*i || arr[0] != r {
			panic("Small returned a wrong value")
		}
	case "Huge":
		want := 2 * i // Leaf(i, 1)
		if (i*7)&1023 == i&1023 {
			want += i
		}
		if r := target.Huge(i); r != want {
			panic("Huge returned a wrong value")
		}
	case "Floats":
		if r := target.Floats(1.5, 2, i%4); r != -0.5+float64(i%4)*3 {
			panic("Floats returned a wrong value")
		}
		calls += i % 4
	case "Panicky":
		defer func() {
			if r := recover(); r != nil {
				if r != target.ErrBad {
					panic(r)
				}
				*panics++
			}
		}()
		if r := target.Panicky(i); r != 2*i {
			panic("Panicky returned a wrong value")
		}
	}
	return calls
}

// TestReturnRingNoReader: with nobody reading a function's return events, one call
// waits (at most maxStall) for a reader, whichever P's ring it found full; the others
// go on at once and their events are dropped, and counted.
func TestReturnRingNoReader(t *testing.T) {
	f := lookup(t, "Small")
	drainAll(f)
	before := f.Stats()
	if err := f.SetReturn(true); err != nil {
		t.Fatal(err)
	}
	const N = 3 * ringSize
	start := time.Now()
	for i := range N {
		call(t, "Small", i, new(int))
	}
	took := time.Since(start)
	if err := f.SetReturn(false); err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	waited, dropped := st.Waited-before.Waited, st.Dropped-before.Dropped
	read := drainAll(f)
	// Each P the calls ran on has a ring of its own.
	if waited != 1 || dropped != N-int64(read) || read > ringSize*procs() || took < maxStall {
		t.Errorf("%d calls with no reader: %d waited, %d dropped, %d read, in %v", N, waited, dropped, read, took)
	}
}

// TestReturnRingDrain: a function's Drain, run by the calls that find its ring half
// full, keeps every return event of a burst from many goroutines.
func TestReturnRingDrain(t *testing.T) {
	f := lookup(t, "Small")
	drainAll(f)
	before := f.Stats()
	var mu sync.Mutex
	read := 0
	drain := func() {
		mu.Lock()
		defer mu.Unlock()
		read += drainAll(f)
	}
	if err := Set([]Change{{Func: f, Return: true, Drain: drain}}); err != nil {
		t.Fatal(err)
	}
	const G, N = 4, 5 * ringSize
	var wg sync.WaitGroup
	for range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range N {
				call(t, "Small", i, new(int))
			}
		}()
	}
	wg.Wait()
	if err := f.SetReturn(false); err != nil {
		t.Fatal(err)
	}
	drain()
	st := f.Stats()
	if d, r := st.Dropped-before.Dropped, st.Returns-before.Returns; d != 0 || r != G*N || int64(read) != r || st.Waited == before.Waited {
		t.Errorf("%d calls: %d returns, %d read, %d dropped, %d waited", G*N, r, read, d, st.Waited-before.Waited)
	}
}

// drainAll reads f's return events until none is left, and returns how many.
func drainAll(f *Func) int {
	buf := make([]Return, 256)
	total := 0
	for {
		n := f.ReadReturns(buf)
		if n == 0 {
			return total
		}
		total += n
	}
}

// TestReturnTime: a return event carries the time its function returned, on the
// trace's clock (ticks), not the time it was read; and its latency is that time less
// the entry's.
func TestReturnTime(t *testing.T) {
	f := lookup(t, "Small")
	drainAll(f)
	if err := f.SetReturn(true); err != nil {
		t.Fatal(err)
	}
	defer f.SetReturn(false)
	var arr [64]int
	const N = 50
	var before, after [N]uint64
	for i := range N {
		before[i] = ticks()
		target.Small(&arr, "hi", i)
		after[i] = ticks()
		time.Sleep(100 * time.Microsecond) // delivery is later still
	}
	time.Sleep(5 * time.Millisecond)
	read := ticks()
	buf := make([]Return, 2*N)
	n := f.ReadReturns(buf)
	if n != N {
		t.Fatalf("%d return events for %d calls", n, N)
	}
	rate := nsPerTick()
	for i, e := range buf[:n] {
		if e.Ticks < before[i] || e.Ticks > after[i] {
			t.Errorf("call %d returned between ticks %d and %d, its event says %d (read at %d)", i, before[i], after[i], e.Ticks, read)
		}
		if max := float64(after[i]-before[i])*rate + 1; e.Latency < 0 || float64(e.Latency) > max {
			t.Errorf("call %d: latency %d ns, the call took at most %.0f ns", i, e.Latency, max)
		}
	}
}
