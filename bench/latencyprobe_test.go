package bench

import (
	"testing"
)

import "github.com/gosdt/gosdt/sdt"

var (
	latBlock = sdt.DefineLatency1[int]("blat", "block", "status")
	latDefer = sdt.DefineLatency("blat", "deferred")
	latShort = sdt.DefineLatency("blat", "short")
)

//go:noinline
func timedBlock(x int) int {
	t := latBlock.Start()
	x = x*1103515245 + 12345
	latBlock.End(t, x&7)
	return x
}

//go:noinline
func timedDefer(x int) int {
	t := latDefer.Start()
	defer func() { latDefer.End(t) }()
	return x*1103515245 + 12345
}

//go:noinline
func timedShort(x int) int {
	defer latShort.End(latShort.Start())
	return x*1103515245 + 12345
}

//go:noinline
func untimed(x int) int { return x*1103515245 + 12345 }

// BenchmarkLatencyProbe is the cost per timed call of each form of latency probe,
// off and on (on: counted by the sites' hit counters, no consumer):
//
//	none   the same function without a probe
//	block  t := p.Start(); ...; p.End(t, status)
//	defer  t := p.Start(); defer func() { p.End(t) }()
//	short  defer p.End(p.Start())   (End keeps a branch check: not a site)
func BenchmarkLatencyProbe(b *testing.B) {
	forms := []struct {
		name string
		spec string
		fn   func(int) int
	}{
		{"block", "blat:::block", timedBlock},
		{"defer", "blat:::deferred", timedDefer},
		{"short", "blat:::short", timedShort},
	}
	b.Run("form=none", func(b *testing.B) {
		x := 1
		for b.Loop() {
			x = untimed(x)
		}
		sink = uint64(x)
	})
	for _, f := range forms {
		for _, on := range []bool{false, true} {
			state := "off"
			if on {
				state = "on"
			}
			b.Run("form="+f.name+"/state="+state, func(b *testing.B) {
				if on {
					if _, err := sdt.Enable(f.spec); err != nil {
						b.Fatal(err)
					}
					defer sdt.Disable(f.spec)
				}
				x := 1
				for b.Loop() {
					x = f.fn(x)
				}
				sink = uint64(x)
			})
		}
	}
}
