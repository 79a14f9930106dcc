package amd64

import (
	"testing"

	"github.com/gosdt/gosdt/arch"
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

// BenchmarkFuncReads reads every walked function of the go command as function probes
// do: its returns (funcReturns), its returns by a jump (retJump) and the argument
// words a leaf reads (argReads), each a pass over the function's instructions.
func BenchmarkFuncReads(b *testing.B) {
	testbin.BenchPasses(b, &Arch, 0xCC,
		testbin.Pass{Name: "funcReturns", Run: func(m arch.Memory, w *arch.Walked, _ uint64) { funcReturns(m, w) }},
		testbin.Pass{Name: "retJump", Run: func(m arch.Memory, w *arch.Walked, code uint64) { retJump(m, w, code) }},
		testbin.Pass{Name: "argReads", Run: func(m arch.Memory, w *arch.Walked, _ uint64) { argReads(m, w) }})
}
