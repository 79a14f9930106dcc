package bench

import (
	"sync/atomic"
	"testing"

	"github.com/gosdt/gosdt/sdt"
)

// One probe per consumer, so that each sub-benchmark enables its own.
var (
	fireCounter = sdt.Define1[int]("bfire", "counter", "v")
	fireHandler = sdt.Define1[int]("bfire", "handler", "v")
)

// BenchmarkEnabled is the cost of one fire of an enabled probe (one site, in a chain
// loop), per consumer:
//
//	counter  no handler: only the probe's own per-site hit count
//	handler  a typed handler (Attach) doing an atomic add
//	ring     skipped: sdt feeds its event ring from trace subscriptions (the control
//	         socket) and exports no in-process way to attach one; sdt's own
//	         BenchmarkRing measures it
//	agg      skipped, likewise (aggregations come from sdtctl stat)
func BenchmarkEnabled(b *testing.B) {
	b.Run("consumer=counter", func(b *testing.B) {
		enable(b, "bfire:::counter")
		x := uint64(1)
		for b.Loop() {
			x = x*6364136223846793005 + 1442695040888963407
			sdt.Probe1(&fireCounter, int(x))
		}
		sink = x
	})
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
	// The ring and aggregations are attached through the control socket only; not faked
	// here. See go test -bench Ring ./sdt/.
	b.Run("consumer=ring", func(b *testing.B) { b.Skip("sdt exports no in-process ring consumer: see sdt's BenchmarkRing") })
	b.Run("consumer=agg", func(b *testing.B) { b.Skip("sdt exports no in-process aggregation consumer yet") })
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
