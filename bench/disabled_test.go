package bench

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/bench/internal/kernels"
	"github.com/gosdt/gosdt/sdt"
)

// BenchmarkDisabled is the cost of disabled checks, per loop iteration, in four
// shapes, for every variant side by side:
//
//	none        no check
//	sealed      gosdt site sealed at start: one JMP over the event code
//	branch      the same gosdt kernel, same address, in a process run with
//	            SDT_PATCH=off: the compiler's CMPB $0, flag(SB); JE
//
// One process measures one of sealed and branch (see gosdtVariant); bench/cmd/report
// runs the binary in both states and merges the outputs.
//
//	slog        if logger.Enabled(ctx, slog.LevelDebug) { logger.LogAttrs(...) }, handler at Info
//	trace       if trace.IsEnabled() { trace.Log(...) }
//	atomicbool  if flag.Load() { hook(v) }, one package-level atomic.Bool per site
//
// Shapes (internal/kernels, written by internal/gen):
//
//	chain  one site after a multiply-add that depends on the previous iteration
//	wide   8 independent add chains, one site after each
//	cold   chain, after flushing the flag's cache line (amd64; no trace variant:
//	       its flag is runtime-internal and cannot be flushed)
//	many   one call of a function with 1024 distinct sites (front-end pressure);
//	       ns/site is ns/op divided by 1024
func BenchmarkDisabled(b *testing.B) {
	for _, k := range kernels.Kernels {
		if k.Shape == "cold" && !kernels.Evicts {
			continue
		}
		for _, v := range k.Variants {
			name := v.Name
			if name == "gosdt" {
				name = gosdtVariant
			}
			b.Run("shape="+k.Shape+"/variant="+name, func(b *testing.B) {
				v.Fn(b.N)
				if k.Shape == "many" {
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(k.Sites), "ns/site")
				}
			})
		}
	}
}

// TestSiteStates checks what the comparison rests on: the gosdt kernels' sites are
// all sealed-off, or all branch-only under SDT_PATCH=off, as many as the kernels have.
func TestSiteStates(t *testing.T) {
	if d := sdt.Discovery(); d.Reason != "" || (runtime.GOOS != "linux" || runtime.GOARCH != "amd64") {
		t.Skipf("no patching here (%s/%s): %s", runtime.GOOS, runtime.GOARCH, d.Reason)
	}
	v, err := siteStates()
	if err != nil {
		t.Fatal(err)
	}
	want := "sealed"
	if os.Getenv("SDT_PATCH") == "off" {
		want = "branch"
	}
	if v != want {
		t.Errorf("gosdt kernels are %s, want %s (SDT_PATCH=%q)", v, want, os.Getenv("SDT_PATCH"))
	}
}

// BenchmarkAlignment runs the cross-peer comparison's small loops (shapes chain and
// wide, every variant) at several code alignments: kernels.Aligned holds copies of each
// kernel whose loop starts after 0 to kernels.Pads-1 extra instructions, so that the
// loop header and the checks sit at different offsets from the 32- and 64-byte
// boundaries that the decoders and the micro-op cache work in. bench/cmd/report gives
// the spread (lowest and highest median over the paddings) per shape and variant: a
// difference between variants smaller than their spreads says nothing about the checks.
func BenchmarkAlignment(b *testing.B) {
	for _, k := range kernels.Aligned {
		for _, v := range k.Variants {
			name, pad, _ := strings.Cut(v.Name, "/")
			if name == "gosdt" {
				name = gosdtVariant
			}
			b.Run("shape="+k.Shape+"/variant="+name+"/"+pad, func(b *testing.B) { v.Fn(b.N) })
		}
	}
}
