package control

import (
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

func intArgs(n int) *bridge.Args {
	a := &bridge.Args{N: 1}
	a.Kinds[0], a.Slots[0] = bridge.Int, uint64(n)
	return a
}

func TestRingConcurrentProducers(t *testing.T) {
	r := newRing(1024)
	const producers, each = 8, 5000
	var wg sync.WaitGroup
	done := make(chan struct{})
	got := map[int64]int{}
	var read int
	go func() {
		defer close(done)
		var rec record
		for read+int(r.drops.Load()) < producers*each {
			if r.get(&rec) {
				got[rec.time]++
				read++
			} else {
				runtime.Gosched() // js/wasm has one thread and no preemption
			}
		}
	}()
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r.put(int64(p), 0, 1, intArgs(i))
			}
		}()
	}
	wg.Wait()
	<-done
	if read+int(r.drops.Load()) != producers*each {
		t.Fatalf("read %d + dropped %d != %d", read, r.drops.Load(), producers*each)
	}
	t.Logf("read %d, dropped %d", read, r.drops.Load())
}

func TestRingDropsCounted(t *testing.T) {
	r := newRing(4)
	var a bridge.Args
	for i := range 10 {
		ok := r.put(int64(i), 0, 0, &a)
		if ok != (i < 4) {
			t.Fatalf("put %d: %v", i, ok)
		}
	}
	if d := r.drops.Load(); d != 6 {
		t.Fatalf("drops = %d, want 6", d)
	}
	var rec record
	for i := range 4 {
		if !r.get(&rec) || rec.time != int64(i) {
			t.Fatalf("get %d: %+v", i, rec.time)
		}
	}
	if r.get(&rec) {
		t.Fatal("ring should be empty")
	}
	if !r.put(99, 0, 0, &a) || !r.get(&rec) || rec.time != 99 {
		t.Fatal("ring does not wrap")
	}
}

// TestRecordStrings: strings are cut to StringMax, and further once the record's
// string area is used up; the cut ones are marked.
func TestRecordStrings(t *testing.T) {
	long := strings.Repeat("x", 100)
	a := bridge.Args{N: 4}
	for i, s := range []string{long, "short", long, long} {
		a.Kinds[i], a.Strs[i] = bridge.String, s
	}
	var rec record
	rec.fill(0, 0, 0, &a)
	for i, want := range []int{StringMax, 5, StringMax, stringArea - 2*StringMax - 5} {
		if got := rec.value(i).(string); len(got) != want || got != a.Strs[i][:want] {
			t.Errorf("arg%d = %q (%d bytes), want %d bytes", i, got, len(got), want)
		}
	}
	if rec.cut != 0b1101 {
		t.Errorf("cut = %b", rec.cut)
	}
}

func BenchmarkRingPut(b *testing.B) {
	r := newRing(1024)
	a := bridge.Args{N: 2}
	a.Kinds[0], a.Slots[0] = bridge.Int, 1
	a.Kinds[1], a.Strs[1] = bridge.String, "hello"
	var rec record
	for b.Loop() {
		r.put(nanotime(), 0, 0, &a)
		r.get(&rec)
	}
}
