package arm64

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/arm64/arm64asm"
)

// Registers are tracked by number: W3 and X3 are the same register (a write to W3
// zero-extends into X3). Number 31 is SP or ZR depending on the instruction and is
// never tracked.

// regNum returns the general-purpose register number an argument names, or -1.
func regNum(a arm64asm.Arg) int {
	if n, _, ok := gpReg(a); ok {
		return n
	}
	return -1
}

// gpReg returns the number of the general-purpose register a names (R0..R30, not the
// zero register or SP) and whether it is the 64-bit form.
func gpReg(a arm64asm.Arg) (n int, wide, ok bool) {
	var r arm64asm.Reg
	switch a := a.(type) {
	case arm64asm.Reg:
		r = a
	case arm64asm.RegSP:
		r = arm64asm.Reg(a)
	default:
		return 0, false, false
	}
	switch {
	case r >= arm64asm.X0 && r <= arm64asm.X30:
		return int(r - arm64asm.X0), true, true
	case r >= arm64asm.W0 && r <= arm64asm.W30:
		return int(r - arm64asm.W0), false, true
	}
	return 0, false, false
}

// mentions returns the registers an argument uses (as operand, base, index or shifted
// source) and, for a memory operand with write-back, the base it updates.
func mentions(a arm64asm.Arg) (used []int, writeback int) {
	writeback = -1
	switch a := a.(type) {
	case arm64asm.Reg, arm64asm.RegSP:
		if n := regNum(a); n >= 0 {
			used = append(used, n)
		}
	case arm64asm.MemImmediate:
		if n := regNum(a.Base); n >= 0 {
			used = append(used, n)
			if a.Mode != arm64asm.AddrOffset {
				writeback = n
			}
		}
	case arm64asm.MemExtend:
		for _, r := range []arm64asm.Arg{a.Base, a.Index} {
			if n := regNum(r); n >= 0 {
				used = append(used, n)
			}
		}
	case arm64asm.RegExtshiftAmount:
		// The register field is unexported; its name leads the operand's text ("X3, LSL #2").
		name, _, _ := strings.Cut(a.String(), ",")
		if n, ok := parseGP(name); ok {
			used = append(used, n)
		}
	}
	return used, writeback
}

// parseGP parses "W3" or "X3" (not WZR, XZR, SP).
func parseGP(name string) (int, bool) {
	if len(name) < 2 || (name[0] != 'W' && name[0] != 'X') {
		return 0, false
	}
	n, err := strconv.Atoi(name[1:])
	if err != nil || n < 0 || n > 30 {
		return 0, false
	}
	return n, true
}

// destOps write their first operand without reading it and read every other one.
var destOps = opSet(
	"MOV", "MOVZ", "MOVN", "ADD", "ADDS", "SUB", "SUBS", "AND", "ANDS", "ORR", "ORN", "EOR", "EON",
	"BIC", "BICS", "MUL", "MNEG", "MADD", "MSUB", "SMULL", "UMULL", "SMADDL", "UMADDL", "SMSUBL",
	"UMSUBL", "SMNEGL", "UMNEGL", "SMULH", "UMULH", "SDIV", "UDIV", "LSL", "LSR", "ASR", "ROR",
	"LSLV", "LSRV", "ASRV", "RORV", "UBFM", "SBFM", "UBFX", "SBFX", "UBFIZ", "SBFIZ", "SXTB",
	"SXTH", "SXTW", "UXTB", "UXTH", "NEG", "NEGS", "NGC", "NGCS", "MVN", "CSEL", "CSINC", "CSINV",
	"CSNEG", "CSET", "CSETM", "CINC", "CINV", "CNEG", "ADC", "ADCS", "SBC", "SBCS", "CLZ", "CLS",
	"RBIT", "REV", "REV16", "REV32", "EXTR", "ADR", "ADRP", "MRS",
	"LDR", "LDRB", "LDRH", "LDRSB", "LDRSH", "LDRSW", "LDUR", "LDURB", "LDURH", "LDURSB",
	"LDURSH", "LDURSW", "LDAR", "LDARB", "LDARH", "LDAPR", "LDAPRB", "LDAPRH", "LDXR", "LDXRB",
	"LDXRH", "LDAXR", "LDAXRB", "LDAXRH",
	"FMOV", "FCVTZS", "FCVTZU", "FCVTAS", "FCVTAU", "FCVTMS", "FCVTMU", "FCVTNS", "FCVTNU",
	"FCVTPS", "FCVTPU", "SCVTF", "UCVTF", "UMOV", "SMOV", "DUP", "INS",
)

// pairOps write their first two operands and read the rest.
var pairOps = opSet("LDP", "LDNP", "LDPSW", "LDXP", "LDAXP")

// rmwOps read and write their first operand and read the rest.
var rmwOps = opSet("MOVK", "BFM", "BFI", "BFXIL")

// readOps only read their register operands (compares, stores, prefetches, tests).
var readOps = opSet(
	"CMP", "CMN", "TST", "CCMP", "CCMN", "FCMP", "FCMPE", "FCCMP", "FCCMPE",
	"STR", "STRB", "STRH", "STUR", "STURB", "STURH", "STP", "STNP", "STLR", "STLRB", "STLRH",
	"PRFM", "PRFUM", "CBZ", "CBNZ", "TBZ", "TBNZ", "BR", "BLR", "RET", "DC", "IC", "MSR", "SYS",
)

// statusOps write their first operand (a status register) and read the rest.
var statusOps = opSet("STXR", "STXRB", "STXRH", "STLXR", "STLXRB", "STLXRH", "STXP", "STLXP")

func opSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// regEffect reports whether in reads and whether it writes register r, and whether its
// effect on r is understood at all. An instruction that does not name r leaves it alone:
// A64 has no implicit general-purpose register operands except the link register of BL
// and BLR, and the consecutive pairs of CASP, which are refused here.
func regEffect(in inst, r int) (reads, writes, known bool) {
	op := in.Op.String()
	if strings.HasPrefix(op, "CASP") {
		return false, false, false
	}
	if (in.Op == arm64asm.BL || in.Op == arm64asm.BLR) && r == 30 {
		return in.Op == arm64asm.BLR && regNum(in.Inst.Args[0]) == 30, true, true
	}
	named := false
	for i, a := range in.Inst.Args {
		if a == nil {
			break
		}
		used, wb := mentions(a)
		for _, n := range used {
			if n != r {
				continue
			}
			named = true
			switch {
			case wb == r:
				reads, writes = true, true
			case i == 0 && (destOps[op] || statusOps[op] || pairOps[op]):
				writes = true
			case i == 1 && pairOps[op]:
				writes = true
			case i == 0 && rmwOps[op]:
				reads, writes = true, true
			default:
				reads = true
			}
		}
	}
	if !named {
		return false, false, true
	}
	known = destOps[op] || pairOps[op] || rmwOps[op] || readOps[op] || statusOps[op]
	return reads, writes, known
}

// Limits of the walk in regDead.
const (
	deadMaxInsts = 96
	maxJumps     = 4
)

// regDead proves that register r holds nothing anyone reads at pc: on every path from
// pc, r is written before it is read, or the path reaches a RET, or a BL that call says
// kills or never returns. Both sides of conditional branches are followed (backward
// ones too: a path that meets a pc already walked is covered by that walk), up to 96
// instructions in all. Anything else that names r, an indirect branch, an undecodable
// word or running out of budget means "not proven": the error says why.
//
// RET and a killing BL count as no use of r: the caller tracks a value that Go code
// never passes as an argument or returns (a probe's flag byte, which package sdt only
// compares with zero), so r can only be an argument or result register there by chance.
func regDead(m arch.Memory, pc uint64, r int, call func(target uint64) arch.CallEffect) error {
	start := pc
	var seenBuf [deadMaxInsts]uint64 // pcs walked: at most the budget, on the stack
	seen := seenBuf[:0]
	work := []uint64{pc}
	budget := deadMaxInsts
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		for jumps := 0; ; {
			if slices.Contains(seen, pc) {
				break
			}
			if budget--; budget < 0 {
				return shapeErr(start, "R%d not proven dead within %d instructions", r, deadMaxInsts)
			}
			seen = append(seen, pc)
			in, err := decode(m, pc)
			if err != nil {
				return shapeErr(start, "R%d not proven dead: %v", r, err)
			}
			switch {
			case in.Op == arm64asm.RET:
				goto next
			case in.Op == arm64asm.BL:
				switch call(in.Target) {
				case arch.CallKills, arch.CallNoReturn:
					goto next
				}
				pc = in.End()
				continue
			case in.Op == arm64asm.BR || in.Op == arm64asm.BLR:
				return shapeErr(in.PC, "R%d at %#x not proven dead: indirect branch %v", r, start, in.Inst)
			}
			reads, writes, known := regEffect(in, r)
			if !known {
				return shapeErr(in.PC, "R%d at %#x not proven dead: %v not understood", r, start, in.Inst)
			}
			if reads {
				return shapeErr(in.PC, "R%d at %#x is live: %v reads it", r, start, in.Inst)
			}
			if writes {
				goto next
			}
			switch {
			case isCondBranch(in):
				work = append(work, in.Target)
				pc = in.End()
			case in.Op == arm64asm.B:
				if jumps++; jumps > maxJumps {
					return shapeErr(in.PC, "R%d at %#x not proven dead: more than %d jumps", r, start, maxJumps)
				}
				pc = in.Target
			case isUncond(in):
				return shapeErr(in.PC, "R%d at %#x not proven dead: %v", r, start, in.Inst)
			default:
				pc = in.End()
			}
		}
	next:
	}
	return nil
}
