package bench

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

// One probe per consumer, so that each sub-benchmark enables its own.
var (
	fireCounter = sdt.Define1[int]("bfire", "counter", "v")
	fireHandler = sdt.Define1[int]("bfire", "handler", "v")
	fireTrace   = sdt.Define1[int]("bfire", "trace", "v")
	fireAgg     = sdt.Define1[int]("bfire", "agg", "v")
)

// BenchmarkEnabled is the cost of one fire of an enabled probe (one site, in a chain
// loop), per consumer:
//
//	counter  no handler: only the probe's own per-site hit count
//	handler  a typed handler (Attach) doing an atomic add
//	trace    into a trace's buffer (control.OpenTrace, what sdtctl trace attaches),
//	         a reader draining it on another goroutine; drops/op reported; rate=20M:
//	         one goroutine firing at a steady 20M fires/s (ns/op is then the pace)
//	agg      into an aggregation keyed by probe that counts, sums, or sums and
//	         quantizes the argument (control.OpenAggregation, what sdtctl stat
//	         attaches); each P folds into its own cells
//
// goroutines=N fires from N goroutines at once (RunParallel): ns/op is then the
// time per fire of all of them together.
func BenchmarkEnabled(b *testing.B) {
	for _, g := range []int{1, 2} {
		b.Run(fmt.Sprintf("consumer=counter/goroutines=%d", g), func(b *testing.B) {
			enable(b, "bfire:::counter")
			runFires(b, g, siteCounter)
		})
	}
	b.Run("consumer=handler", func(b *testing.B) {
		var n atomic.Uint64
		defer fireHandler.Attach(func(v int) { n.Add(uint64(v)) })()
		enable(b, "bfire:::handler")
		x := uint64(1)
		for b.Loop() {
			x = x*6364136223846793005 + 1442695040888963407
			sdt.Probe1(&fireHandler, int(x))
		}
		sink = x + n.Load()
	})
	for _, g := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("consumer=trace/goroutines=%d", g), func(b *testing.B) {
			traceBench(b, func(b *testing.B) { runFires(b, g, siteTrace) })
		})
	}
	b.Run("consumer=trace/rate=20M", func(b *testing.B) {
		traceBench(b, func(b *testing.B) { pacedFires(b, 20e6, siteTrace) })
	})
	for _, c := range []struct {
		name string
		o    control.AggOptions
	}{
		{"count", control.AggOptions{}},
		{"sum", control.AggOptions{Value: "v"}},
		{"quantize", control.AggOptions{Value: "v", Hist: true}},
	} {
		for _, g := range []int{1, 2} {
			b.Run(fmt.Sprintf("consumer=agg/%s/goroutines=%d", c.name, g), func(b *testing.B) {
				agg, err := control.OpenAggregation("bfire:::agg", c.o)
				if err != nil {
					b.Fatal(err)
				}
				defer agg.Close()
				runFires(b, g, siteAgg)
				if n := agg.Snapshot().Rows[0].Count; n < int64(b.N) {
					b.Fatalf("%d fires, %d folded", b.N, n)
				}
			})
		}
	}
}

// One site per probe: a site compares its definition's flag at a static address
// (through a pointer it would be no site, and its fires not attributed).
//
//go:noinline
func siteCounter(x int) { sdt.Probe1(&fireCounter, x) }

//go:noinline
func siteTrace(x int) { sdt.Probe1(&fireTrace, x) }

//go:noinline
func siteAgg(x int) { sdt.Probe1(&fireAgg, x) }

// runFires calls site b.N times from g goroutines (RunParallel beyond one), with an
// argument from a chain of multiplications.
func runFires(b *testing.B, g int, site func(int)) {
	if g == 1 {
		x := uint64(1)
		for b.Loop() {
			x = x*6364136223846793005 + 1442695040888963407
			site(int(x >> 40))
		}
		sink = x
		return
	}
	b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		x := uint64(1)
		for pb.Next() {
			x = x*6364136223846793005 + 1442695040888963407
			site(int(x >> 40))
		}
	})
}

// pacedFires calls site b.N times from one goroutine at a steady rate per second,
// a hundred fires at a time: a batch ahead of its schedule waits (spinning: a sleep
// is coarser than a batch), one behind goes on at once. It reports the rate it
// kept (fires/s): below rate, the machine could not fire that fast.
func pacedFires(b *testing.B, rate float64, site func(int)) {
	start := time.Now()
	x := uint64(1)
	for i := 0; i < b.N; {
		for end := min(i+100, b.N); i < end; i++ {
			x = x*6364136223846793005 + 1442695040888963407
			site(int(x >> 40))
		}
		for due := time.Duration(float64(i) / rate * 1e9); time.Since(start) < due; {
		}
	}
	sink = x
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "fires/s")
}

// traceBench runs fire with a trace of bfire:::trace open and a reader taking its
// events as they come, as a stream to sdtctl does (every millisecond, the records as
// they are). It reports the drops per fire, and checks that every fire was read or
// counted dropped.
func traceBench(b *testing.B, fire func(b *testing.B)) {
	tr, err := control.OpenTrace("bfire:::trace", control.TraceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var read atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			n, err := tr.Each(time.Millisecond, func(*control.Record) bool { return true })
			read.Add(uint64(n))
			select {
			case <-stop:
				if n == 0 || err != nil {
					return
				}
			default:
				if err != nil {
					return
				}
			}
		}
	}()
	d0 := tr.Drops()
	fire(b)
	close(stop)
	wg.Wait()
	drops := tr.Drops() - d0
	b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
	tr.Close()
	if got := read.Load() + drops; got < uint64(b.N) {
		b.Fatalf("%d fires, %d read and %d dropped", b.N, read.Load(), drops)
	}
}

// enable enables spec for the rest of b and checks that it switched a site.
func enable(b *testing.B, spec string) {
	b.Helper()
	n, err := sdt.Enable(spec)
	if err != nil {
		b.Fatal(err)
	}
	if n == 0 {
		b.Fatalf("enable %s: no site", spec)
	}
	b.Cleanup(func() {
		if _, err := sdt.Disable(spec); err != nil {
			b.Error(err)
		}
	})
}
