package amd64

import (
	"strings"

	"github.com/gosdt/gosdt/arch"
)

// Arithmetic flags tracked by flagsDead.
const (
	fCF uint8 = 1 << iota
	fPF
	fZF
	fSF
	fOF
	fAll = fCF | fPF | fZF | fSF | fOF
)

func flagNames(f uint8) string {
	var s []string
	for i, n := range []string{"CF", "PF", "ZF", "SF", "OF"} {
		if f&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	return strings.Join(s, ",")
}

// fx is what an instruction does to the arithmetic flags: those it may read (a
// superset of the truth) and those it always writes (a subset: flags the SDM leaves
// undefined do not count as written).
type fx struct{ reads, writes uint8 }

var (
	neutral = fx{}
	writes  = fx{writes: fAll}
)

// Condition codes (the low nibble of Jcc, SETcc, CMOVcc): the flags each tests, by
// cc>>1, and their names.
var (
	ccFlags = [8]uint8{fOF, fCF, fZF, fCF | fZF, fSF, fPF, fSF | fOF, fZF | fSF | fOF}
	ccNames = [16]string{"O", "NO", "B", "AE", "E", "NE", "BE", "A", "S", "NS", "P", "NP", "L", "GE", "LE", "G"}
)

// aluNames are the ALU operations of 00-3F and the 80-83 group, by opcode>>3 or
// ModRM.reg; ADC and SBB read CF, CMP writes only flags.
var aluNames = [8]string{"ADD", "OR", "ADC", "SBB", "AND", "SUB", "XOR", "CMP"}

func aluFx(i uint8) fx {
	if i == 2 || i == 3 {
		return fx{reads: fCF}
	}
	return writes
}

// flagEffect returns what in does to the flags and its mnemonic, and whether the
// effect is known. The table is by encoding (map, opcode, ModRM.reg for groups,
// mandatory prefix where it matters) and conservative: an instruction it does not
// list is unknown, and a proof stops there. It knows Go's moves, arithmetic, logic,
// compares, condition-code users, shifts, bit tests, the SSE moves, arithmetic and
// conversions Go emits, prefetches, fences, and VEX/EVEX vector code. The name may be
// given where the effect is not known (RET, UD2), for messages.
func flagEffect(in *inst) (e fx, name string, known bool) {
	if in.enc != encLegacy {
		return vexFlags(in)
	}
	op, reg := in.op, in.regDigit()
	rep := in.pfx & (pF2 | pF3)
	mand := rep // the mandatory prefix of an SSE instruction: F2 or F3, else 66
	if mand == 0 {
		mand = in.pfx & p66
	}
	switch in.m {
	case mapOne:
		switch {
		case op < 0x40 && op&7 < 6:
			return aluFx(op >> 3), aluNames[op>>3], true
		case op >= 0x50 && op <= 0x57, op == 0x68, op == 0x6A:
			return neutral, "PUSH", true
		case op >= 0x58 && op <= 0x5F:
			return neutral, "POP", true
		case op >= 0x70 && op <= 0x7F:
			return fx{reads: ccFlags[op&0xF>>1]}, "J" + ccNames[op&0xF], true
		case op >= 0x80 && op <= 0x83:
			return aluFx(reg), aluNames[reg], true
		case op >= 0x88 && op <= 0x8B, op >= 0xB0 && op <= 0xBF, op == 0xC6, op == 0xC7:
			return neutral, "MOV", true
		case op == 0x90 && in.pfx&pF3 != 0:
			return neutral, "PAUSE", true
		case op == 0x90 && in.rex&1 == 0:
			return neutral, "NOP", true
		case op >= 0x90 && op <= 0x97, op == 0x86, op == 0x87:
			return neutral, "XCHG", true
		case op == 0xA6, op == 0xA7, op == 0xAE, op == 0xAF:
			name := "CMPS"
			if op >= 0xAE {
				name = "SCAS"
			}
			if rep != 0 {
				return neutral, "REP " + name, true // with a zero count, no flag is written
			}
			return writes, name, true
		case op == 0xC0, op == 0xC1, op >= 0xD0 && op <= 0xD3:
			return shiftFx(in)
		}
		switch op {
		case 0x63:
			return neutral, "MOVSXD", true
		case 0x69, 0x6B:
			return fx{writes: fCF | fOF}, "IMUL", true
		case 0x84, 0x85, 0xA8, 0xA9:
			return writes, "TEST", true
		case 0x8D:
			return neutral, "LEA", true
		case 0x8F:
			return neutral, "POP", true
		case 0x98, 0x99:
			return neutral, "CDQE/CQO", true // CBW CWDE CDQE CWD CDQ CQO
		case 0x9C:
			return fx{reads: fAll}, "PUSHF", true
		case 0x9D:
			return writes, "POPF", true
		case 0x9E:
			return fx{writes: fCF | fPF | fZF | fSF}, "SAHF", true
		case 0x9F:
			return fx{reads: fAll}, "LAHF", true
		case 0xA4, 0xA5:
			return neutral, "MOVS", true
		case 0xAA, 0xAB:
			return neutral, "STOS", true
		case 0xE0, 0xE1:
			return fx{reads: fZF}, "LOOPcc", true
		case 0xF5:
			return fx{reads: fCF}, "CMC", true
		case 0xF8:
			return fx{writes: fCF}, "CLC", true
		case 0xF9:
			return fx{writes: fCF}, "STC", true
		case 0xF6, 0xF7:
			switch reg {
			case 0:
				return writes, "TEST", true
			case 2:
				return neutral, "NOT", true
			case 3:
				return writes, "NEG", true
			case 4, 5:
				return fx{writes: fCF | fOF}, [2]string{"MUL", "IMUL"}[reg-4], true
			case 6, 7:
				return neutral, [2]string{"DIV", "IDIV"}[reg-6], true
			}
		case 0xFE, 0xFF:
			switch reg {
			case 0, 1:
				return fx{writes: fAll &^ fCF}, [2]string{"INC", "DEC"}[reg], true
			case 2:
				return neutral, "CALL", false
			case 4:
				return neutral, "JMP", false
			case 6:
				return neutral, "PUSH", true
			}
		case 0xC2, 0xC3:
			return neutral, "RET", false
		case 0xCA, 0xCB:
			return neutral, "LRET", false
		case 0xCC:
			return neutral, "INT3", false
		case 0xE2, 0xE3:
			return neutral, "LOOP", false // LOOP, JRCXZ
		case 0xE8:
			return neutral, "CALL", false
		case 0xE9, 0xEB:
			return neutral, "JMP", false
		case 0xF4:
			return neutral, "HLT", false
		}
	case map0F:
		return flags0F(in, mand)
	case map0F38:
		switch {
		case op == 0x00:
			return neutral, "PSHUFB", true
		case op == 0x17:
			return writes, "PTEST", true
		case (op == 0xF0 || op == 0xF1) && rep == pF2:
			return neutral, "CRC32", true
		case op == 0xF0 || op == 0xF1:
			return neutral, "MOVBE", true
		}
	case map0F3A:
		if op == 0x0A || op == 0x0B {
			return neutral, "ROUNDSx", true
		}
	}
	return neutral, "", false
}

// flags0F is flagEffect for the 0F map; mand is the mandatory prefix.
func flags0F(in *inst, mand uint8) (fx, string, bool) {
	op, reg, mem := in.op, in.regDigit(), in.mod() != 3
	sse := mand == pF2 || mand == pF3 // a scalar SSE instruction
	switch {
	case op >= 0x40 && op <= 0x4F:
		return fx{reads: ccFlags[op&0xF>>1]}, "CMOV" + ccNames[op&0xF], true
	case op >= 0x80 && op <= 0x8F:
		return fx{reads: ccFlags[op&0xF>>1]}, "J" + ccNames[op&0xF], true
	case op >= 0x90 && op <= 0x9F:
		return fx{reads: ccFlags[op&0xF>>1]}, "SET" + ccNames[op&0xF], true
	case op >= 0xC8 && op <= 0xCF:
		return neutral, "BSWAP", true
	}
	switch op {
	case 0x01:
		if in.modrm == 0xF9 {
			return neutral, "RDTSCP", true
		}
	case 0x0B:
		return neutral, "UD2", false
	case 0x0D, 0x18:
		return neutral, "PREFETCH", true
	case 0x10, 0x11, 0x28, 0x29:
		return neutral, "MOVUPS/MOVAPS/MOVSS/MOVSD", true
	case 0x12, 0x13, 0x16, 0x17:
		// MOVLPS MOVLPD MOVHPS MOVHPD; not MOVHLPS, MOVLHPS, MOVSLDUP, MOVDDUP, MOVSHDUP.
		if mand == p66 || mand == 0 && mem {
			return neutral, "MOVLPx/MOVHPx", true
		}
	case 0x1F:
		return neutral, "NOP", true
	case 0x2A, 0x2C, 0x2D, 0x51, 0x58, 0x59, 0x5A, 0x5C, 0x5D, 0x5E, 0x5F:
		if sse { // CVTSI2Sx CVTTSx2SI CVTSx2SI SQRT ADD MUL CVT SUB MIN DIV MAX, scalar
			return neutral, "SSE scalar", true
		}
	case 0x2E, 0x2F:
		return writes, "UCOMISx/COMISx", true
	case 0x31:
		return neutral, "RDTSC", true
	case 0x54, 0x55, 0x56, 0x57:
		return neutral, "ANDPx/ORPx/XORPx", true
	case 0x6C:
		return neutral, "PUNPCKLQDQ", true
	case 0x6E, 0x7E:
		if mand != pF2 {
			return neutral, "MOVD/MOVQ", true
		}
	case 0x6F, 0x7F:
		return neutral, "MOVQ/MOVDQA/MOVDQU", true
	case 0x70:
		if mand == p66 {
			return neutral, "PSHUFD", true
		}
	case 0x74:
		return neutral, "PCMPEQB", true
	case 0xA2:
		return neutral, "CPUID", true
	case 0xA3, 0xAB, 0xB3, 0xBB:
		return fx{writes: fCF}, "BT/BTS/BTR/BTC", true
	case 0xBA:
		return fx{writes: fCF}, "BT/BTS/BTR/BTC", true // reg 4-7
	case 0xA4, 0xA5, 0xAC, 0xAD:
		return neutral, "SHLD/SHRD", true // only their undefined counts leave flags alone
	case 0xAE:
		if !mem && reg >= 5 {
			return neutral, "LFENCE/MFENCE/SFENCE", true
		}
	case 0xAF:
		return fx{writes: fCF | fOF}, "IMUL", true
	case 0xB0, 0xB1:
		return writes, "CMPXCHG", true
	case 0xB6, 0xB7, 0xBE, 0xBF:
		return neutral, "MOVZX/MOVSX", true
	case 0xB8:
		return writes, "POPCNT", true
	case 0xBC, 0xBD:
		if mand == pF3 {
			return fx{writes: fCF | fZF}, "TZCNT/LZCNT", true
		}
		return fx{writes: fZF}, "BSF/BSR", true
	case 0xC0, 0xC1:
		return writes, "XADD", true
	case 0xC3:
		return neutral, "MOVNTI", true
	case 0xC7:
		if reg == 1 {
			return fx{writes: fZF}, "CMPXCHG8B/16B", true
		}
	case 0xD4, 0xD6, 0xD7, 0xDB, 0xEB, 0xEF:
		return neutral, "SSE2 integer", true // PADDQ MOVQ PMOVMSKB PAND POR PXOR
	}
	return neutral, "", false
}

// shiftFx is flagEffect for the shift and rotate group (C0, C1, D0-D3). ROL and ROR,
// RCL and RCR write no flag for certain (a zero count leaves them all), RCL and RCR
// read CF. SHL, SHR and SAR write CF, PF, ZF, SF with an immediate count in
// 1..width-1, and OF too for a count of 1; by CL, or with another count, nothing for
// certain.
func shiftFx(in *inst) (fx, string, bool) {
	reg := in.regDigit()
	switch reg {
	case 0, 1:
		return neutral, [2]string{"ROL", "ROR"}[reg], true
	case 2, 3:
		return fx{reads: fCF}, [2]string{"RCL", "RCR"}[reg-2], true
	case 6:
		return neutral, "SAL", false
	}
	name := [8]string{4: "SHL", 5: "SHR", 7: "SAR"}[reg]
	width := 8
	if in.op&1 != 0 {
		switch {
		case in.w():
			width = 64
		case in.pfx&p66 != 0:
			width = 16
		default:
			width = 32
		}
	}
	var c int
	switch in.op {
	case 0xC0, 0xC1:
		c = int(in.imm)
	case 0xD0, 0xD1:
		c = 1
	default:
		return neutral, name, true // by CL
	}
	if width == 64 { // the CPU masks the count to 6 bits for 64-bit operands, else 5
		c &= 63
	} else {
		c &= 31
	}
	switch {
	case c == 1:
		return writes, name, true
	case c > 1 && c < width:
		return fx{writes: fAll &^ fOF}, name, true
	}
	return neutral, name, true
}

// vexFlags is flagEffect for VEX and EVEX instructions. Vector code leaves the flags
// alone, except the compares and tests that write them all; the mask register
// instructions (KORTEST writes flags) and some BMI ones are unknown.
func vexFlags(in *inst) (fx, string, bool) {
	m, op, vex := in.m, in.op, in.enc == encVEX
	switch {
	case m == map0F && (op >= 0x41 && op <= 0x4B || op >= 0x90 && op <= 0x93 || op == 0x98 || op == 0x99),
		m == map0F3A && op >= 0x30 && op <= 0x33:
		return neutral, "mask register op", false
	case m == map0F && (op == 0x2E || op == 0x2F) && in.pfx&(pF2|pF3) == 0:
		return writes, "VUCOMISx/VCOMISx", true
	case m == map0F38 && op == 0x17 && vex:
		return writes, "VPTEST", true
	case m == map0F38 && op >= 0xF2 && op <= 0xF7 && vex:
		// ANDN, BLSR, BZHI, PEXT, PDEP, MULX, SHLX, SARX, SHRX; not BLSMSK, BLSI, BEXTR.
		switch {
		case op == 0xF2, op == 0xF3 && in.regDigit() == 1, op == 0xF5, op == 0xF6, op == 0xF7 && in.pfx != 0:
			return neutral, "BMI", true
		}
		return neutral, "BMI", false
	case m == map0F3A && op == 0xF0 && vex:
		return neutral, "RORX", true
	}
	return neutral, "AVX", true
}

// flagsDead proves that the arithmetic flags (ZF, CF, SF, OF, PF) are dead at
// pc: the straight-line path from pc writes all of them, or reaches a CALL or
// RET (Go's ABI keeps no flags live across either), before anything reads one.
// It follows up to 4 direct JMPs and 32 instructions. An instruction outside
// flagEffect's table, one the decoder does not know, an indirect jump, a trap,
// or running out of budget means "not proven": the error says why.
func flagsDead(m arch.Memory, pc uint64) error {
	start := pc
	live := fAll // flags that may still carry the value of before pc
	jumps := 0
	for n := 0; n < flagsMaxInsts; n++ {
		in, err := decodeAt(m, pc)
		if err != nil {
			return err
		}
		switch in.flow {
		case flowCall, flowCallInd, flowRet:
			return nil
		case flowJmp:
			if jumps++; jumps > maxJumps {
				return shapeErr(pc, "flags at %#x not proven dead: more than %d jumps", start, maxJumps)
			}
			pc = in.target(pc)
			continue
		case flowJmpInd:
			return shapeErr(pc, "flags at %#x not proven dead: indirect jump %v (%s live)", start, in.text(m, pc), flagNames(live))
		}
		e, _, known := flagEffect(&in)
		if !known {
			return shapeErr(pc, "flags at %#x not proven dead: %v not understood (%s live)", start, in.text(m, pc), flagNames(live))
		}
		if e.reads&live != 0 {
			return shapeErr(pc, "flags at %#x not proven dead: %v reads %s", start, in.text(m, pc), flagNames(e.reads&live))
		}
		if live &^= e.writes; live == 0 {
			return nil
		}
		if in.flow == flowJcc || in.flow == flowTrap {
			return shapeErr(pc, "flags at %#x not proven dead: %v (%s live)", start, in.text(m, pc), flagNames(live))
		}
		pc += uint64(in.n)
	}
	return shapeErr(start, "flags not proven dead within %d instructions (%s live)", flagsMaxInsts, flagNames(live))
}
