package arm64

import (
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
)

// A64 is fixed-width: every aligned word of a function is an instruction boundary, so a
// walk of a function needs only where its direct branches go. Those are read from the
// raw encodings below; the decoder reads only the words a site's proof walks.
// TestRawAgreesWithArm64asm checks the raw classes against arm64asm on real binaries
// and on random words.

// rawKind is what the raw decoder makes of a word.
type rawKind uint8

const (
	rawOther  rawKind = iota // not a branch (valid or not: the decoder decides)
	rawB                     // B: unconditional, direct
	rawBL                    // BL: a call, direct
	rawCond                  // B.cond, CBZ, CBNZ, TBZ, TBNZ: conditional, direct
	rawADR                   // ADR: takes a label's address (not a branch)
	rawUncond                // BR, RET, BRK, HLT, ERET: never falls through, no target
)

// raw classifies w at pc and returns the target of a direct branch or ADR.
func raw(w uint32, pc uint64) (rawKind, uint64) {
	imm19 := func() uint64 { return pc + uint64(int64(int32(w<<8)>>13)*4) }
	switch {
	case w&0xFC000000 == 0x14000000:
		return rawB, pc + uint64(int64(int32(w<<6)>>6)*4)
	case w&0xFC000000 == 0x94000000:
		return rawBL, pc + uint64(int64(int32(w<<6)>>6)*4)
	case w&0xFF000010 == 0x54000000: // B.cond (bit 4 set is BC.cond, which the decoder does not know)
		return rawCond, imm19()
	case w&0x7E000000 == 0x34000000: // CBZ, CBNZ
		return rawCond, imm19()
	case w&0x7E000000 == 0x36000000: // TBZ, TBNZ
		return rawCond, pc + uint64(int64(int32(w<<13)>>18)*4)
	case w&0x9F000000 == 0x10000000: // ADR
		imm := int64(int32(w<<8)>>13)<<2 | int64(w>>29&3)
		return rawADR, pc + uint64(imm)
	case w&0xFFFFFC1F == 0xD61F0000, w&0xFFFFFC1F == 0xD65F0000, // BR, RET
		w&0xFFE0001F == 0xD4200000, w&0xFFE0001F == 0xD4400000, // BRK, HLT
		w == 0xD69F03E0: // ERET
		return rawUncond, 0
	}
	return rawOther, 0
}

// walkChunk is how much code walk reads at a time.
const walkChunk = 4096

// walker is walk's memory, reused from one function to the next through a cache.
type walker struct {
	w     arch.Walked
	calls []uint64
}

// walk reads the words of the function [entry, end) (Arch.Walk) with the raw decoder:
// where its direct branches (and ADRs) go. Every aligned word is an instruction start;
// the raw classes are the decoder's rows for B, BL, B.cond, CBZ, CBNZ, TBZ, TBNZ and
// ADR, which need no check beyond their masks.
func walk(m arch.Memory, entry, end uint64) (*arch.Walked, error) {
	if entry%instLen != 0 || end <= entry {
		return nil, shapeErr(entry, "function [%#x, %#x) is not a run of aligned words", entry, end)
	}
	wr := new(walker)
	if c, ok := m.(*cache); ok {
		wr = &c.walker
	}
	w := &wr.w
	*w = arch.Walked{Entry: entry, Width: instLen, Targets: w.Targets[:0]}
	calls := wr.calls[:0]
	defer func() { wr.calls = calls }()
	pc := entry
	for pc < end {
		chunk := m.Read(pc, int(min(end-pc, walkChunk)))
		if len(chunk) < instLen {
			break
		}
		for off := 0; off+instLen <= len(chunk); off, pc = off+instLen, pc+instLen {
			switch kind, target := raw(binary.LittleEndian.Uint32(chunk[off:]), pc); kind {
			case rawB, rawCond, rawADR:
				w.Targets = append(w.Targets, target)
			case rawBL:
				calls = append(calls, target)
			}
		}
	}
	if pc == entry {
		return w, shapeErr(entry, "no code mapped")
	}
	w.End = pc
	w.Insts = int(pc-entry) / instLen
	for _, t := range calls {
		if t >= w.Entry && t < w.End {
			w.Targets = append(w.Targets, t)
		}
	}
	w.Targets = arch.SortTargets(w.Targets)
	return w, nil
}

// wordIter reads, in order, the words of a walked function from its entry to an end:
// its instructions, every aligned word being one. It is the one pass over a
// function's code of the readers of function probes (funcReturns, retJump, notLeaf,
// argReads, liveIn):
//
//	it, err := words(m, w, end) // err: the code is not all mapped
//	for it.next() {
//		... it.x, the word at it.pc ...
//	}
type wordIter struct {
	code  []byte // [entry, end)
	entry uint64
	off   int    // the next word's offset in code
	pc    uint64 // the word's
	x     uint32 // the word at pc
}

// words starts a wordIter over the walked function w's words before end (a word
// boundary), or says that they are not all mapped.
func words(m arch.Memory, w *arch.Walked, end uint64) (wordIter, error) {
	code := m.Read(w.Entry, int(end-w.Entry))
	if len(code) != int(end-w.Entry) {
		return wordIter{}, shapeErr(w.Entry, "the function's code is not all mapped")
	}
	return wordIter{code: code, entry: w.Entry}, nil
}

// next moves to the next word: false at the end.
func (it *wordIter) next() bool {
	if it.off+instLen > len(it.code) {
		return false
	}
	it.pc, it.x = it.entry+uint64(it.off), binary.LittleEndian.Uint32(it.code[it.off:])
	it.off += instLen
	return true
}
