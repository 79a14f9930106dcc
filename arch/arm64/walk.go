package arm64

import (
	"encoding/binary"
	"slices"

	"github.com/gosdt/gosdt/arch"
)

// A64 is fixed-width: every aligned word of a function is an instruction boundary, so a
// walk of a function needs only where its direct branches go and where it ends. Those
// are read from the raw encodings below; arm64asm decodes the words a site is made of
// and, at the few places where a function may end, words that are not branches.
// TestRawAgreesWithArm64asm checks the raw classes against arm64asm on real binaries
// and on random words.

// rawKind is what the raw decoder makes of a word.
type rawKind uint8

const (
	rawOther  rawKind = iota // not a branch (valid or not: arm64asm decides)
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
	case w&0xFF000010 == 0x54000000: // B.cond (bit 4 set is BC.cond, left to arm64asm)
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

// walk walks a Go function from entry with decodeFunc's rule for where it ends
// (Arch.Walk; inFunc must not be nil), without decoding every word: a word that may
// end the function (an unconditional transfer, or one arm64asm cannot decode) matters
// only where inFunc rejects the next pc, so arm64asm is asked about a word only there.
// inFunc must be a pure function of its argument.
func walk(m arch.Memory, entry uint64, inFunc func(pc uint64) bool) (*arch.Walked, error) {
	if entry%instLen != 0 {
		return nil, shapeErr(entry, "function entry not 4-byte aligned")
	}
	if inFunc == nil {
		return nil, shapeErr(entry, "walk needs inFunc")
	}
	w := &arch.Walked{Entry: entry, Width: instLen}
	var calls []uint64
	var chunk []byte
	chunkPC := entry
	pc := entry
	for {
		off := int(pc - chunkPC)
		if chunk == nil || off+instLen > len(chunk) {
			chunk, chunkPC, off = m.Read(pc, walkChunk), pc, 0
		}
		if off+instLen > len(chunk) {
			break
		}
		word := binary.LittleEndian.Uint32(chunk[off:])
		kind, target := raw(word, pc)
		switch kind {
		case rawB, rawCond, rawADR:
			w.Targets = append(w.Targets, target)
		case rawBL:
			calls = append(calls, target)
		}
		pc += instLen
		ends := false
		switch kind {
		case rawB, rawUncond:
			ends = !inFunc(pc)
		case rawOther:
			// Ends the function if arm64asm cannot decode it and inFunc rejects pc.
			// Both are pure; ask the cheaper first: Go's functions start 16-byte
			// aligned, so elsewhere inFunc answers at once (sled's does), and at an
			// aligned pc one arm64asm decode costs less than a symbol lookup.
			if pc%16 == 0 {
				w.Slow++
				ends = decodeWord(word, pc-instLen).Bad && !inFunc(pc)
			} else if !inFunc(pc) {
				w.Slow++
				ends = decodeWord(word, pc-instLen).Bad
			}
		}
		if ends {
			break
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
	slices.Sort(w.Targets)
	w.Targets = slices.Compact(w.Targets)
	return w, nil
}
