package arm64

import (
	"encoding/binary"
	"fmt"

	"github.com/gosdt/gosdt/arch"
)

// instLen is the length of every A64 instruction.
const instLen = 4

// inst is one instruction as the decoder reads it, with its absolute addresses
// resolved.
type inst struct {
	PC     uint64
	Word   uint32 // the raw encoding
	row    uint16 // its row + 1; 0: not an instruction the decoder knows
	Flow   flow
	Target uint64 // a direct branch's target, an ADR's address, an ADRP's page; else 0
	// Reads holds the general-purpose registers (bit n: Rn, n < 31) the instruction
	// may read, Writes those it certainly writes.
	Reads, Writes uint32
}

// Known reports whether the decoder knows the instruction.
func (in inst) Known() bool { return in.row != 0 }

// End is the address just past the instruction.
func (in inst) End() uint64 { return in.PC + instLen }

// Name is the instruction's mnemonic, for messages: the row's, or for the rows that
// hold a family (loads and stores, add and logical with registers, conditional
// selects) the member's, with the aliases CMP, CMN, TST and MOV where they apply; ""
// if the decoder does not know it.
func (in inst) Name() string {
	if in.row == 0 {
		return ""
	}
	r, w := &rows[in.row-1], in.Word
	zd, zn := w&31 == 31, w>>5&31 == 31
	switch {
	case r.form == formLdSt:
		return ldstName(w)
	case r.form == formAddShift || r.form == formAddExt || r.value&0x1F000000 == 0x11000000: // ADD, ADDS, SUB, SUBS
		if w&(1<<29) != 0 && zd {
			return [...]string{"CMN", "CMP"}[w>>30&1]
		}
		return [...]string{"ADD", "ADDS", "SUB", "SUBS"}[w>>29&3]
	case r.form == formLogShift:
		if name := [...]string{"AND", "BIC", "ORR", "ORN", "EOR", "EON", "ANDS", "BICS"}[w>>29&3<<1|w>>21&1]; name == "ANDS" && zd {
			return "TST"
		} else if name == "ORR" && zn && w&0x00C0FC00 == 0 {
			return "MOV"
		} else {
			return name
		}
	case r.name == "ANDS" && zd:
		return "TST"
	case r.name == "ADC":
		return [...]string{"ADC", "ADCS", "SBC", "SBCS"}[w>>29&3]
	case r.name == "CCMP":
		return [...]string{"CCMN", "CCMP"}[w>>30&1]
	case r.name == "CSEL":
		return [...]string{"CSEL", "CSINC", "CSINV", "CSNEG"}[w>>29&2|w>>10&1]
	case r.name == "B.cond":
		return "B." + [...]string{"EQ", "NE", "CS", "CC", "MI", "PL", "VS", "VC", "HI", "LS", "GE", "LT", "GT", "LE", "AL", "NV"}[w&15]
	case r.name == "MADD":
		return [...]string{"MADD", "MSUB"}[w>>15&1]
	case r.name == "UDIV":
		return [...]string{"UDIV", "SDIV"}[w>>10&1]
	case r.name == "LSLV":
		return [...]string{"LSLV", "LSRV", "ASRV", "RORV"}[w>>10&3]
	case r.form == formFP1:
		return [...]string{"FMOV", "FABS", "FNEG", "FSQRT", "FCVT", "FCVT", "FCVT", "FCVT",
			"FRINTN", "FRINTP", "FRINTM", "FRINTZ", "FRINTA", "FRINT", "FRINTX", "FRINTI"}[w>>15&15]
	case r.form == formFP2:
		return [...]string{"FMUL", "FDIV", "FADD", "FSUB", "FMAX", "FMIN", "FMAXNM", "FMINNM", "FNMUL"}[w>>12&15]
	case r.name == "FMADD":
		return [...]string{"FMADD", "FMSUB", "FNMADD", "FNMSUB"}[w>>20&2|w>>15&1]
	case r.value&0x3F000000 == 0x08000000 && w>>30 < 2: // exclusive and ordered, B and H
		return r.name + [...]string{"B", "H"}[w>>30]
	}
	return r.name
}

// ldstName names a single-register load or store: LDR, STRB, LDURSH, LDTR, PRFM...
func ldstName(w uint32) string {
	size, opc := w>>30, w>>22&3
	op := "LD"
	switch {
	case w&(1<<26) == 0 && size == 3 && opc == 2:
		op = "PRF"
	case opc == 0 || w&(1<<26) != 0 && opc == 2:
		op = "ST"
	}
	mode := "R"
	switch {
	case w&(1<<24) != 0 || w&(1<<21) != 0: // unsigned offset, register offset
	case w>>10&3 == 0:
		mode = "UR"
	case w>>10&3 == 2:
		mode = "TR"
	}
	if op == "PRF" {
		return map[string]string{"R": "PRFM", "UR": "PRFUM"}[mode]
	}
	suffix := ""
	if w&(1<<26) == 0 {
		if opc >= 2 {
			suffix = "S"
		}
		suffix += [...]string{"B", "H", "W", ""}[size]
		if suffix == "W" {
			suffix = ""
		}
	}
	return op + mode + suffix
}

func (in inst) String() string {
	if in.row == 0 {
		return fmt.Sprintf("%#08x", in.Word)
	}
	return fmt.Sprintf("%s (%#08x)", in.Name(), in.Word)
}

// decode decodes the one instruction at pc (once per site, mostly, if m is a *cache). A word the decoder does not know is an
// error naming pc and the word (the inst is returned, with its PC), and so is a pc
// that is not 4-byte aligned (A64 code never is) or not mapped (the inst is zero).
func decode(m arch.Memory, pc uint64) (inst, error) {
	if pc%instLen != 0 {
		return inst{}, shapeErr(pc, "pc not 4-byte aligned")
	}
	var e *decoded
	c, cached := m.(*cache)
	if cached {
		if e = &c.insts[pc/instLen%uint64(len(c.insts))]; e.gen == c.gen && e.in.PC == pc {
			return e.in, nil
		}
	}
	b := m.Read(pc, instLen)
	if len(b) < instLen {
		return inst{}, shapeErr(pc, "no code mapped")
	}
	in := decodeWord(binary.LittleEndian.Uint32(b), pc)
	if !in.Known() {
		return in, shapeErr(pc, "cannot decode %#08x: not an instruction the decoder knows", in.Word)
	}
	if cached {
		e.gen, e.in = c.gen, in
	}
	return in, nil
}

// decodeWord decodes w at pc with the table; the result is not Known when no row
// matches. It allocates nothing.
func decodeWord(w uint32, pc uint64) inst {
	x := tableIndex.Load()
	if x == nil {
		x = table()
	}
	b := w >> bucketShift
	for _, i := range x.rows[x.start[b]:x.start[b+1]] {
		r := &rows[i]
		if w&r.mask != r.value {
			continue
		}
		var t fx
		if r.form != formPlain {
			var ok bool
			if t, ok = r.form.check(w); !ok {
				continue
			}
		}
		// The fields in registers, the inst made once: a struct filled field by field
		// and then copied whole stalls on store forwarding.
		var target uint64
		switch r.flow {
		case flowB, flowBL:
			target = pc + uint64(int64(int32(w<<6)>>6)*4)
		case flowCond:
			if w&0x7E000000 == 0x36000000 { // TBZ, TBNZ
				target = pc + uint64(int64(int32(w<<13)>>18)*4)
			} else {
				target = pc + uint64(int64(int32(w<<8)>>13)*4)
			}
		case flowADR:
			target = pc + uint64(int64(int32(w<<8)>>13)<<2|int64(w>>29&3))
		case flowADRP:
			target, _, _ = adrp(w, pc)
		}
		reads, writes := effect(r.fx|t, w)
		return inst{PC: pc, Word: w, row: i + 1, Flow: r.flow, Target: target, Reads: reads, Writes: writes}
	}
	return inst{PC: pc, Word: w}
}

// effect returns the registers an instruction of effect f reads and writes. A field
// holding 31 (SP or ZR) sets bit 31, which is cleared at the end.
func effect(f fx, w uint32) (reads, writes uint32) {
	if f&(rd|wd) != 0 {
		d := uint32(1) << (w & 31)
		if f&rd != 0 {
			reads = d
		}
		if f&wd != 0 {
			writes = d
		}
	}
	if f&(rn|wn) != 0 {
		n := uint32(1) << (w >> 5 & 31)
		if f&rn != 0 {
			reads |= n
		}
		if f&wn != 0 {
			writes |= n
		}
	}
	if f&(rm|wm|ra|wa|wlr|rlr|rall|r1716) != 0 {
		m, a := uint32(1)<<(w>>16&31), uint32(1)<<(w>>10&31)
		if f&rm != 0 {
			reads |= m
		}
		if f&wm != 0 {
			writes |= m
		}
		if f&ra != 0 {
			reads |= a
		}
		if f&wa != 0 {
			writes |= a
		}
		if f&rlr != 0 {
			reads |= 1 << 30
		}
		if f&wlr != 0 {
			writes |= 1 << 30
		}
		if f&r1716 != 0 {
			reads |= 1<<16 | 1<<17
			writes |= 1 << 17
		}
		if f&rall != 0 {
			reads = 1<<31 - 1
		}
	}
	return reads &^ (1 << 31), writes &^ (1 << 31)
}

// isCondBranch reports B.cond, CBZ, CBNZ, TBZ and TBNZ.
func isCondBranch(in inst) bool { return in.Flow == flowCond }

// isUncond reports whether control never falls through past the instruction.
func isUncond(in inst) bool {
	switch in.Flow {
	case flowB, flowBR, flowRET, flowTrap:
		return true
	}
	return false
}

// decodeFunc decodes the function [entry, end). Words the decoder does not know
// (literal pools, the zero padding between functions, instructions past its table)
// are kept, not Known: A64 has fixed-size aligned instructions, so one such word
// cannot hide the next. Code that ends before end is an error naming the pc.
func decodeFunc(m arch.Memory, entry, end uint64) ([]inst, error) {
	if entry%instLen != 0 {
		return nil, shapeErr(entry, "function entry not 4-byte aligned")
	}
	insts := make([]inst, 0, (end-entry)/instLen)
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
		switch in.Flow {
		case flowB, flowCond, flowADR:
			t[in.Target] = true
		case flowBL:
			if in.Target >= lo && in.Target < hi {
				t[in.Target] = true
			}
		}
	}
	return t
}

// Raw field decoders for the handful of encodings a site is made of: exact and cheap,
// for the pre-filter over the whole text.

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
