package bench

import (
	"runtime"
	"testing"

	"github.com/gosdt/gosdt/sdt"
)

// BenchmarkDisabled is the cost of disabled checks, per loop iteration, in four
// shapes, for every variant side by side:
//
//	none        no check
//	branch      gosdt site with the compiler's CMPB $0, flag(SB); JE (sdt.Unseal)
//	sealed      gosdt site sealed at start: one JMP over the event code
//	slog        if logger.Enabled(ctx, slog.LevelDebug) { logger.LogAttrs(...) }, handler at Info
//	trace       if trace.IsEnabled() { trace.Log(...) }
//	atomicbool  if flag.Load() { hook(v) }, one package-level atomic.Bool per site
//
// Shapes (kernels_gen_test.go, written by internal/gen):
//
//	chain  one site after a multiply-add that depends on the previous iteration
//	wide   8 independent add chains, one site after each
//	cold   chain, after flushing the flag's cache line (amd64; no trace variant:
//	       its flag is runtime-internal and cannot be flushed)
//	many   one call of a function with 1024 distinct sites (front-end pressure);
//	       ns/site is ns/op divided by 1024
func BenchmarkDisabled(b *testing.B) {
	for _, k := range kernels {
		if k.shape == "cold" && !evicts {
			continue
		}
		for _, v := range k.variants {
			b.Run("shape="+k.shape+"/variant="+v.name, func(b *testing.B) {
				v.fn(b)
				if k.shape == "many" {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(k.sites), "ns/site")
				}
			})
		}
	}
}

// TestSiteStates checks what the comparison rests on: every site of the sealed
// variant is sealed-off and every site of the branch variant is branch-only, with
// as many sites as the kernels have. Without it a site that discovery missed would
// make "sealed" silently measure a branch check.
func TestSiteStates(t *testing.T) {
	if d := sdt.Discovery(); d.Reason != "" || (runtime.GOOS != "linux" || runtime.GOARCH != "amd64") {
		t.Skipf("no patching here (%s/%s): %s", runtime.GOOS, runtime.GOARCH, d.Reason)
	}
	want := 0
	for _, k := range kernels {
		want += k.sites
	}
	for _, c := range []struct {
		provider string
		state    sdt.SiteState
	}{{"bsealed", sdt.SealedOff}, {"bbranch", sdt.BranchOnly}} {
		probes, err := sdt.List(c.provider + ":::")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range probes {
			for _, s := range p.Sites {
				n++
				if s.State != c.state {
					t.Errorf("%s at %s:%d: %v (%s), want %v", p, s.File, s.Line, s.State, s.Reason, c.state)
				}
			}
		}
		if n != want {
			t.Errorf("%s: %d sites, want %d (one per kernel site)", c.provider, n, want)
		}
	}
}
