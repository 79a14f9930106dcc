package amd64

import (
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
)

// BenchmarkFuncReads reads every walked function of the go command as function probes
// do: its returns (funcReturns), its returns by a jump (retJump, to its code's end
// before the INT3 padding) and the argument words a leaf reads (argReads). Each a pass
// over the function's instructions: the cost per instruction, and what it allocates.
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
		for code > w.Entry && bin.Text.Read(code-1, 1)[0] == 0xCC {
			code--
		}
		ws, codes, insts = append(ws, w), append(codes, code), insts+w.Insts
	}
	for _, r := range []struct {
		name string
		read func(w *arch.Walked, code uint64)
	}{
		{"funcReturns", func(w *arch.Walked, _ uint64) { funcReturns(m, w) }},
		{"retJump", func(w *arch.Walked, code uint64) { retJump(m, w, code) }},
		{"argReads", func(w *arch.Walked, _ uint64) { argReads(m, w) }},
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
