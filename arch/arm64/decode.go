package arm64

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/arm64/arm64asm"
)

// instLen is the length of every A64 instruction.
const instLen = 4

// inst is one decoded instruction with its absolute addresses resolved.
type inst struct {
	PC     uint64
	Word   uint32 // the raw encoding
	Op     arm64asm.Op
	Target uint64 // absolute target of a direct B, BL, B.cond, CBZ, CBNZ, TBZ, TBNZ, else 0
	Bad    bool   // not a valid instruction (literal pool data, padding); inst is zero
	Inst   arm64asm.Inst
}

// End is the address just past the instruction.
func (in inst) End() uint64 { return in.PC + instLen }

func (in inst) String() string {
	if in.Bad {
		return fmt.Sprintf("%#x: .word %#08x", in.PC, in.Word)
	}
	return fmt.Sprintf("%#x: %v", in.PC, in.Inst)
}

// decode decodes the one instruction at pc (once per site, if m is a *cache).
// Undecodable words are an error here, and so is a pc that is not 4-byte aligned: A64
// code never is.
func decode(m arch.Memory, pc uint64) (inst, error) {
	if pc%instLen != 0 {
		return inst{}, shapeErr(pc, "pc not 4-byte aligned")
	}
	c, cached := m.(*cache)
	if cached {
		if in, ok := c.insts.Get(pc); ok {
			return in, nil
		}
	}
	b := m.Read(pc, instLen)
	if len(b) < instLen {
		return inst{}, shapeErr(pc, "no code mapped")
	}
	in := decodeWord(binary.LittleEndian.Uint32(b), pc)
	if in.Bad {
		return in, shapeErr(pc, "cannot decode %#08x", in.Word)
	}
	if cached {
		c.insts.Put(pc, in)
	}
	return in, nil
}

// arm64asmMu serialises arm64asm.Decode, which is not safe for concurrent use: it
// records which of its formats matched in a package-level slice (decoderCover), a data
// race between goroutines, which -race reports in the traced program. Discovery proves
// sites on several goroutines; the walks between decodes run in parallel.
var arm64asmMu sync.Mutex

func decodeWord(w uint32, pc uint64) inst {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], w)
	arm64asmMu.Lock()
	ai, err := arm64asm.Decode(b[:])
	arm64asmMu.Unlock()
	if err != nil {
		return inst{PC: pc, Word: w, Bad: true}
	}
	in := inst{PC: pc, Word: w, Op: ai.Op, Inst: ai}
	if isDirectBranch(ai.Op) {
		for _, a := range ai.Args {
			if r, ok := a.(arm64asm.PCRel); ok {
				in.Target = pc + uint64(int64(r))
			}
		}
	}
	return in
}

// isDirectBranch reports the PC-relative branches (their PCRel is relative to the
// branch itself).
func isDirectBranch(op arm64asm.Op) bool {
	switch op {
	case arm64asm.B, arm64asm.BL, arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ:
		return true
	}
	return false
}

// isCondBranch reports whether op may or may not branch. arm64asm decodes B.cond as B
// with a Cond argument.
func isCondBranch(in inst) bool {
	switch in.Op {
	case arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ:
		return true
	case arm64asm.B:
		_, ok := in.Inst.Args[0].(arm64asm.Cond)
		return ok
	}
	return false
}

// isUncond reports whether control never falls through past the instruction.
func isUncond(in inst) bool {
	switch in.Op {
	case arm64asm.B:
		return !isCondBranch(in)
	case arm64asm.BR, arm64asm.RET, arm64asm.BRK, arm64asm.HLT, arm64asm.ERET:
		return true
	}
	return false
}

// decodeFunc decodes the function [entry, end) with arm64asm. Words that do not decode
// (literal pools, the zero padding between functions) are kept as Bad instructions:
// A64 has fixed-size aligned instructions, so one bad word cannot hide the next. Code
// that ends before end is an error naming the pc.
func decodeFunc(m arch.Memory, entry, end uint64) ([]inst, error) {
	if entry%instLen != 0 {
		return nil, shapeErr(entry, "function entry not 4-byte aligned")
	}
	var insts []inst
	for pc := entry; pc < end; pc += instLen {
		b := m.Read(pc, instLen)
		if len(b) < instLen {
			return insts, shapeErr(pc, "function ends before %#x: no code mapped", end)
		}
		insts = append(insts, decodeWord(binary.LittleEndian.Uint32(b), pc))
	}
	return insts, nil
}

// branchTargets returns every direct branch target in the function: those of B,
// B.cond, CBZ, CBNZ, TBZ, TBNZ, of BLs that land inside the decoded range, and of ADRs
// (Go's arm64 code takes label addresses with ADR, e.g. for deferreturn).
func branchTargets(insts []inst) map[uint64]bool {
	t := make(map[uint64]bool)
	if len(insts) == 0 {
		return t
	}
	lo, hi := insts[0].PC, insts[len(insts)-1].End()
	for _, in := range insts {
		target := in.Target
		if in.Op == arm64asm.ADR {
			if r, ok := in.Inst.Args[1].(arm64asm.PCRel); ok {
				target = in.PC + uint64(int64(r))
			}
		}
		if target == 0 {
			continue
		}
		if in.Op != arm64asm.BL || (target >= lo && target < hi) {
			t[target] = true
		}
	}
	return t
}

// Raw field decoders for the handful of encodings a site is made of. They are exact
// and cheap, for the pre-filter over the whole text; matches are re-checked with
// arm64asm.

// adrp decodes ADRP Xd, label: the page address it loads (relative to pc) and d.
func adrp(w uint32, pc uint64) (page uint64, rd int, ok bool) {
	if w&0x9F000000 != 0x90000000 {
		return 0, 0, false
	}
	imm := int64(w>>29&3) | int64(w>>5&0x7FFFF)<<2
	imm = imm << 43 >> 43 // sign-extend 21 bits
	return pc&^0xFFF + uint64(imm<<12), int(w & 31), true
}

// ldrbImm decodes LDRB Wt, [Xn, #imm12] (unsigned offset form).
func ldrbImm(w uint32) (rt, rn int, imm uint64, ok bool) {
	if w&0xFFC00000 != 0x39400000 {
		return 0, 0, 0, false
	}
	return int(w & 31), int(w >> 5 & 31), uint64(w >> 10 & 0xFFF), true
}

// addImm decodes ADD Xd, Xn, #imm12 (64-bit, unshifted, flags not set).
func addImm(w uint32) (rd, rn int, imm uint64, ok bool) {
	if w&0xFFC00000 != 0x91000000 {
		return 0, 0, 0, false
	}
	return int(w & 31), int(w >> 5 & 31), uint64(w >> 10 & 0xFFF), true
}
