package amd64

import (
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
)

// BenchmarkWalk walks every function of the go command through a cache, as
// discovery does: the cost of a function walk per instruction.
func BenchmarkWalk(b *testing.B) {
	bin := testbin.Binaries(b, &Arch)[0]
	c := newCache(bin.Text)
	insts := 0
	for b.Loop() {
		insts = 0
		for _, fn := range bin.Funcs {
			if w, err := walk(c, fn.Entry, fn.End); err == nil {
				insts += w.Insts
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(insts), "ns/inst")
}
