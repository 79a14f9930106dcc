package sdt

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gosdt/gosdt/internal/quantize"
)

var (
	consProbe = Define2[int, string]("constest", "fire", "n", "s")
	consKind  = Define3[uint8, float64, bool]("constest", "kinds", "u", "f", "b")
)

//go:noinline
func consSite(n int, s string) { Probe2(&consProbe, n, s) }

//go:noinline
func kindSite(u uint8, f float64, b bool) { Probe3(&consKind, u, f, b) }

func TestRingConcurrentProducers(t *testing.T) {
	r := newRing(1024)
	const producers, each = 8, 5000
	var wg sync.WaitGroup
	done := make(chan struct{})
	got := map[int64]int{}
	var read int
	go func() {
		defer close(done)
		var e event
		for read+int(r.drops.Load()) < producers*each {
			if r.get(&e) {
				got[e.Time]++
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
				var v argv
				n := i
				setArg(&v, 0, &n)
				r.put(int64(p), 0, 1, 1, &v)
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
	var v argv
	for i := range 10 {
		ok := r.put(int64(i), 0, 0, 1, &v)
		if ok != (i < 4) {
			t.Fatalf("put %d: %v", i, ok)
		}
	}
	if d := r.drops.Load(); d != 6 {
		t.Fatalf("drops = %d, want 6", d)
	}
	var e event
	for i := range 4 {
		if !r.get(&e) || e.Time != int64(i) {
			t.Fatalf("get %d: %+v", i, e.Time)
		}
	}
	if r.get(&e) {
		t.Fatal("ring should be empty")
	}
	if !r.put(99, 0, 0, 1, &v) || !r.get(&e) || e.Time != 99 {
		t.Fatal("ring does not wrap")
	}
}

func TestEventStrings(t *testing.T) {
	long := strings.Repeat("x", 100)
	var v argv
	a, b, c, d := long, "short", long, long
	setArg(&v, 0, &a)
	setArg(&v, 1, &b)
	setArg(&v, 2, &c)
	setArg(&v, 3, &d)
	var e event
	e.fill(&v)
	if got := e.format(0); got != long[:StringMax] {
		t.Errorf("arg0 = %q", got)
	}
	if got := e.format(1); got != "short" {
		t.Errorf("arg1 = %q", got)
	}
	if got := e.format(2); got != long[:StringMax] {
		t.Errorf("arg2 = %q (len %d)", got, len(got))
	}
	if got := e.format(3); len(got) != StringArea-2*StringMax-5 {
		t.Errorf("arg3 has %d bytes, want %d", len(got), StringArea-2*StringMax-5)
	}
	if e.Trunc != 0b1101 {
		t.Errorf("Trunc = %b", e.Trunc)
	}
}

func TestBuckets(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want int
		low  int64
	}{
		{0, 64, 0},
		{1, 65, 1},
		{2, 66, 2}, {3, 66, 2},
		{4, 67, 4}, {1023, 74, 512}, {1024, 75, 1024},
		{math.MaxInt64, 127, 1 << 62},
		{-1, 63, -1},
		{-2, 62, -2}, {-3, 62, -2}, {-4, 61, -4},
		{math.MinInt64 + 1, 1, -(1 << 62)},
		{math.MinInt64, 0, math.MinInt64},
	} {
		b := quantize.Bucket(c.v)
		if b != c.want || quantize.Low(b) != c.low {
			t.Errorf("Bucket(%d) = %d (low %d), want %d (low %d)", c.v, b, quantize.Low(b), c.want, c.low)
		}
	}
}

func TestTraceAndAggregate(t *testing.T) {
	NeedSwitchable(t, "constest:::")
	if _, err := subscribe("nosuch:::probe", nil); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("subscribe nosuch: %v", err)
	}
	tr, err := subscribe("constest:::fire", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	agg := newAggregation(aggBy{Kind: "arg", Arg: 1}, 0, true)
	sub, err := subscribe("constest:::fire", agg)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.close()
	if _, err := Enable("constest:::"); err != nil {
		t.Fatal(err)
	}
	defer Disable("constest:::")
	r := procRing.Load()
	var e event
	for r.get(&e) {
	}
	for i := range 10 {
		consSite(i, []string{"even", "odd"}[i%2])
	}
	kindSite(200, -2.5, true)
	for i := range 10 {
		if !r.get(&e) {
			t.Fatalf("event %d missing", i)
		}
		if e.Subs&tr.bit == 0 || e.NArgs != 2 || e.Int(0) != int64(i) || e.format(1) != []string{"even", "odd"}[i%2] {
			t.Fatalf("event %d: %+v", i, e)
		}
		// Without a site matcher (386, ...) fires are not attributed: site 0.
		attributed := runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"
		if p := probeByID(e.Probe); p != consProbe.core || (attributed && e.Site == 0) {
			t.Fatalf("event %d from %v at %#x", i, p, e.Site)
		}
	}
	if r.get(&e) {
		t.Fatalf("unexpected event from probe %d", e.Probe)
	}
	snap := agg.snapshot()
	if len(snap.Rows) != 2 || snap.Rows[0].Count != 5 || snap.Rows[0].Key != "even" || snap.Rows[0].Sum != 20 ||
		snap.Rows[1].Key != "odd" || snap.Rows[1].Min != 1 || snap.Rows[1].Max != 9 {
		t.Fatalf("snapshot %+v", snap)
	}
	if h := snap.Rows[0].Hist; len(h) != 4 || h[0].Low != 0 || h[3].Low != 8 {
		t.Fatalf("hist %+v", h)
	}
}

func TestArgKinds(t *testing.T) {
	var v argv
	u, f, b := uint8(200), -2.5, true
	type named int16
	n := named(-7)
	setArg(&v, 0, &u)
	setArg(&v, 1, &f)
	setArg(&v, 2, &b)
	setArg(&v, 3, &n)
	var e event
	e.fill(&v)
	for i, want := range []string{"200", "-2.5", "true", "-7"} {
		if got := e.format(i); got != want {
			t.Errorf("arg%d = %q, want %q", i, got, want)
		}
	}
	if e.Int(1) != -2 || e.Int(3) != -7 {
		t.Errorf("Int: %d %d", e.Int(1), e.Int(3))
	}
}

// BenchmarkRing is the cost the ring adds to an enabled fire: the same site enabled
// with no consumer and with a trace attached (a reader drains the ring meanwhile).
func BenchmarkRing(b *testing.B) {
	if _, err := Enable("constest:::fire"); err != nil {
		b.Fatal(err)
	}
	defer Disable("constest:::fire")
	b.Run("enabled-no-consumer", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			consSite(i, "hello")
		}
	})
	b.Run("enabled-ring", func(b *testing.B) {
		tr, err := subscribe("constest:::fire", nil)
		if err != nil {
			b.Fatal(err)
		}
		defer tr.close()
		r := procRing.Load()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var e event
			for {
				select {
				case <-stop:
					return
				default:
				}
				for r.get(&e) {
				}
			}
		}()
		d0 := r.drops.Load()
		for i := 0; b.Loop(); i++ {
			consSite(i, "hello")
		}
		close(stop)
		wg.Wait()
		b.ReportMetric(float64(r.drops.Load()-d0)/float64(b.N), "drops/op")
	})
	b.Run("ring-put", func(b *testing.B) {
		r := newRing(1024)
		var v argv
		n, s := 1, "hello"
		setArg(&v, 0, &n)
		setArg(&v, 1, &s)
		var e event
		for b.Loop() {
			r.put(nanotime(), 0, 0, 1, &v)
			r.get(&e)
		}
	})
}
