package amd64

import (
	"fmt"
	"math/bits"

	"github.com/gosdt/gosdt/arch"
)

// decodeAt decodes the instruction at pc with the decoder; an instruction it does not
// know is an error naming pc and the bytes.
func decodeAt(m arch.Memory, pc uint64) (inst, error) {
	var in inst
	b := m.Read(pc, maxInstLen)
	if len(b) == 0 {
		return in, shapeErr(pc, "no code mapped")
	}
	if !decodeInst(b, &in) {
		return in, shapeErr(pc, "cannot decode % x: not an instruction the decoder knows", b[:min(len(b), 8)])
	}
	return in, nil
}

// instIter reads, in order, the instructions of the walked function w that start
// before end, each decoded (decodeAt). They are the walk's (w.Starts), so that every
// pass over a function reads the instructions its walk proved:
//
//	for it := insts(m, w, end); it.next(); {
//		... it.in, the instruction at it.pc ...
//	}
//	if it.err != nil { ... the decoder could not read the instruction at it.pc ... }
//
// A cursor, not a range-over-func iterator: the compiler inlines such an iterator, and
// the checks of its state, into each of its loops, and every program that places
// function probes carries them (TestImportCost).
type instIter struct {
	m    arch.Memory
	w    *arch.Walked
	end  uint64
	from uint64 // where next looks for an instruction start
	pc   uint64 // the instruction's
	in   inst   // the instruction at pc
	err  error  // decodeAt's error at pc, which ended the walk
}

// insts starts an instIter over the instructions of w that start before end.
func insts(m arch.Memory, w *arch.Walked, end uint64) instIter {
	return instIter{m: m, w: w, end: end, from: w.Entry}
}

// next moves to the next instruction: false at end or when the decoder cannot read
// it (then err says why).
func (it *instIter) next() bool {
	if it.err != nil {
		return false
	}
	if it.pc = nextStart(it.w, it.from); it.pc >= it.end {
		return false
	}
	it.in, it.err = decodeAt(it.m, it.pc)
	it.from = it.pc + 1
	return it.err == nil
}

// nextStart is the first instruction start of w at pc or after, or w.End if there
// is none.
func nextStart(w *arch.Walked, pc uint64) uint64 {
	for o := pc - w.Entry; o < w.End-w.Entry; o = o&^63 + 64 {
		if s := w.Starts[o/64] >> (o % 64); s != 0 {
			return w.Entry + o + uint64(bits.TrailingZeros64(s))
		}
	}
	return w.End
}

// text is the instruction at pc for messages: its mnemonic where the decoder knows
// one, and its bytes.
func (in *inst) text(m arch.Memory, pc uint64) string {
	b := m.Read(pc, int(in.n))
	if _, name, _ := flagEffect(in); name != "" {
		return fmt.Sprintf("%s (% x)", name, b)
	}
	return fmt.Sprintf("% x", b)
}
