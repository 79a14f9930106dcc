package testbin

import (
	"testing"

	"github.com/gosdt/gosdt/arch"
)

// Pass is a pass over a walked function in m, for BenchPasses; code is where the
// function's code ends, before the linker's padding.
type Pass struct {
	Name string
	Run  func(m arch.Memory, w *arch.Walked, code uint64)
}

// BenchPasses walks every function of a real binary of a's (the first of Binaries),
// then benchmarks each pass over all of them, a sub-benchmark each: its cost per
// instruction walked, and what it allocates. pad is the byte the linker pads
// functions with (amd64's INT3, arm64's zero words).
func BenchPasses(b *testing.B, a *arch.Arch, pad byte, passes ...Pass) {
	bin := Binaries(b, a)[0]
	var m arch.Memory = bin.Text
	var ws []*arch.Walked // through bin.Text, not a cache: each walk its own
	var codes []uint64
	insts := 0
	for _, fn := range bin.Funcs {
		w, err := a.Walk(bin.Text, fn.Entry, fn.End)
		if err != nil {
			continue
		}
		code := w.End
		for code > w.Entry && bin.Text.Read(code-1, 1)[0] == pad {
			code--
		}
		if step := uint64(max(w.Width, 1)); (code-w.Entry)%step != 0 {
			code += step - (code-w.Entry)%step // a word's high bytes may be the padding's
		}
		ws, codes, insts = append(ws, w), append(codes, code), insts+w.Insts
	}
	for _, p := range passes {
		b.Run(p.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i, w := range ws {
					p.Run(m, w, codes[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(insts), "ns/inst")
		})
	}
}
