package arm64

import (
	"encoding/binary"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
)

// BenchmarkFuncReads reads every walked function of a real arm64 binary as function
// probes do: its returns (funcReturns), its returns by a jump (retJump, to its code's
// end before the linker's zero padding), whether it is a leaf with a frame (notLeaf),
// and a leaf's argument words and live registers (argReads, liveIn). Each a pass over
// the function's words: the cost per instruction, and what it allocates.
func BenchmarkFuncReads(b *testing.B) {
	bin := testbin.Binaries(b, &Arch)[0]
	var m arch.Memory = bin.Text
	var ws []*arch.Walked
	var codes []uint64
	insts := 0
	for _, fn := range bin.Funcs {
		w, err := walk(bin.Text, fn.Entry, fn.End)
		if err != nil {
			continue
		}
		code := w.End
		for code > w.Entry && binary.LittleEndian.Uint32(bin.Text.Read(code-instLen, instLen)) == 0 {
			code -= instLen
		}
		ws, codes, insts = append(ws, w), append(codes, code), insts+w.Insts
	}
	name := func(pc uint64) string { return "" }
	for _, r := range []struct {
		name string
		read func(w *arch.Walked, code uint64)
	}{
		{"funcReturns", func(w *arch.Walked, _ uint64) { funcReturns(m, w) }},
		{"retJump", func(w *arch.Walked, code uint64) { retJump(m, w, code) }},
		{"notLeaf", func(w *arch.Walked, _ uint64) { notLeaf(m, w, name) }},
		{"argReads", func(w *arch.Walked, _ uint64) { argReads(m, w) }},
		{"liveIn", func(w *arch.Walked, _ uint64) { liveIn(m, w) }},
	} {
		b.Run(r.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i, w := range ws {
					r.read(w, codes[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(insts), "ns/inst")
		})
	}
}
