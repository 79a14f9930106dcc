package arm64

import (
	"encoding/binary"
	"strconv"
	"strings"
	"sync"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/arm64/arm64asm"
)

// arm64asm's reading of instructions: the oracle of the decoder, and the package's
// implementation of Offline.Calls as it was with arm64asm (xcalls), the oracle of calls.

// xinst is one word decoded by arm64asm, with its absolute addresses resolved.
type xinst struct {
	PC     uint64
	Word   uint32
	Op     arm64asm.Op
	Target uint64 // absolute target of a direct B, BL, B.cond, CBZ, CBNZ, TBZ, TBNZ, ADR; ADRP's page
	Bad    bool   // arm64asm does not decode it
	Inst   arm64asm.Inst
}

func (in xinst) End() uint64 { return in.PC + instLen }

// xmu serialises arm64asm.Decode, which writes a package-level slice (decoderCover):
// -race reports concurrent decodes.
var xmu sync.Mutex

func xdecode(w uint32, pc uint64) xinst {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], w)
	xmu.Lock()
	ai, err := arm64asm.Decode(b[:])
	xmu.Unlock()
	if err != nil {
		return xinst{PC: pc, Word: w, Bad: true}
	}
	in := xinst{PC: pc, Word: w, Op: ai.Op, Inst: ai}
	for _, a := range ai.Args {
		if r, ok := a.(arm64asm.PCRel); ok {
			switch f := xflow(in); {
			case f == flowADRP:
				in.Target = pc&^0xFFF + uint64(int64(r))
			case f != flowNext: // not a literal load's address
				in.Target = pc + uint64(int64(r))
			}
		}
	}
	return in
}

// xflows is how control leaves an instruction, by arm64asm's operation; an operation
// not listed falls through. arm64asm decodes B.cond as B with a Cond argument (xflow).
var xflows = map[arm64asm.Op]flow{
	arm64asm.B: flowB, arm64asm.BL: flowBL, arm64asm.CBZ: flowCond, arm64asm.CBNZ: flowCond,
	arm64asm.TBZ: flowCond, arm64asm.TBNZ: flowCond, arm64asm.BR: flowBR, arm64asm.BLR: flowBLR,
	arm64asm.RET: flowRET, arm64asm.BRK: flowTrap, arm64asm.HLT: flowTrap, arm64asm.ERET: flowTrap,
	arm64asm.SVC: flowSVC, arm64asm.ADR: flowADR, arm64asm.ADRP: flowADRP,
}

// xflow is how control leaves an instruction as arm64asm reads it.
func xflow(in xinst) flow {
	if _, ok := in.Inst.Args[0].(arm64asm.Cond); ok && in.Op == arm64asm.B {
		return flowCond
	}
	return xflows[in.Op]
}

// The roles of the registers arm64asm names, by operation: the oracle of the
// decoder's register sets. An operation in none of these sets names no
// general-purpose register, or its roles are not listed (xeffect says which).

// xdestOps write their first operand without reading it and read every other one.
var xdestOps = opSet(
	"MOV", "MOVZ", "MOVN", "ADD", "ADDS", "SUB", "SUBS", "AND", "ANDS", "ORR", "ORN", "EOR", "EON",
	"BIC", "BICS", "MUL", "MNEG", "MADD", "MSUB", "SMULL", "UMULL", "SMADDL", "UMADDL", "SMSUBL",
	"UMSUBL", "SMNEGL", "UMNEGL", "SMULH", "UMULH", "SDIV", "UDIV", "LSL", "LSR", "ASR", "ROR",
	"LSLV", "LSRV", "ASRV", "RORV", "UBFM", "SBFM", "UBFX", "SBFX", "UBFIZ", "SBFIZ", "SXTB",
	"SXTH", "SXTW", "UXTB", "UXTH", "NEG", "NEGS", "NGC", "NGCS", "MVN", "CSEL", "CSINC", "CSINV",
	"CSNEG", "CSET", "CSETM", "CINC", "CINV", "CNEG", "ADC", "ADCS", "SBC", "SBCS", "CLZ", "CLS",
	"RBIT", "REV", "REV16", "REV32", "EXTR", "ADR", "ADRP", "MRS", "SYSL",
	"LDR", "LDRB", "LDRH", "LDRSB", "LDRSH", "LDRSW", "LDUR", "LDURB", "LDURH", "LDURSB",
	"LDURSH", "LDURSW", "LDAR", "LDARB", "LDARH", "LDXR", "LDXRB", "LDXRH", "LDAXR", "LDAXRB", "LDAXRH",
	"LDTR", "LDTRB", "LDTRH", "LDTRSB", "LDTRSH", "LDTRSW",
	"CRC32B", "CRC32H", "CRC32W", "CRC32X", "CRC32CB", "CRC32CH", "CRC32CW", "CRC32CX",
	"FMOV", "FCVTZS", "FCVTZU", "FCVTAS", "FCVTAU", "FCVTMS", "FCVTMU", "FCVTNS", "FCVTNU",
	"FCVTPS", "FCVTPU", "SCVTF", "UCVTF", "UMOV", "SMOV", "DUP", "INS",
)

// xpairOps write their first two operands and read the rest.
var xpairOps = opSet("LDP", "LDNP", "LDPSW", "LDXP", "LDAXP")

// xrmwOps read and write their first operand and read the rest.
var xrmwOps = opSet("MOVK", "BFM", "BFI", "BFXIL")

// xreadOps only read their register operands (compares, stores, prefetches, tests).
var xreadOps = opSet(
	"CMP", "CMN", "TST", "CCMP", "CCMN", "FCMP", "FCMPE", "FCCMP", "FCCMPE",
	"STR", "STRB", "STRH", "STUR", "STURB", "STURH", "STP", "STNP", "STLR", "STLRB", "STLRH",
	"STTR", "STTRB", "STTRH",
	"PRFM", "PRFUM", "CBZ", "CBNZ", "TBZ", "TBNZ", "BR", "BLR", "RET", "DC", "IC", "AT", "TLBI", "MSR", "SYS",
	"LD1", "LD2", "LD3", "LD4", "LD1R", "LD2R", "LD3R", "LD4R", "ST1", "ST2", "ST3", "ST4",
)

// xstatusOps write their first operand (a status register) and read the rest.
var xstatusOps = opSet("STXR", "STXRB", "STXRH", "STLXR", "STLXRB", "STLXRH", "STXP", "STLXP")

func opSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// xeffect returns the general-purpose registers arm64asm's reading of in names
// (operands, bases, indexes, shifted and extended registers), and of them the ones
// the role tables say it reads and writes, with the link register BL and BLR write;
// roles is false for an operation that names a register and is in no table.
func xeffect(in xinst) (named, reads, writes uint32, roles bool) {
	op := in.Op.String()
	roles = xdestOps[op] || xpairOps[op] || xrmwOps[op] || xreadOps[op] || xstatusOps[op]
	for i, a := range in.Inst.Args {
		if a == nil {
			break
		}
		used, wb := xmentions(a)
		for _, n := range used {
			bit := uint32(1) << n
			named |= bit
			switch {
			case wb == n:
				reads, writes = reads|bit, writes|bit
			case i == 0 && (xdestOps[op] || xstatusOps[op] || xpairOps[op]):
				writes |= bit
			case i == 1 && xpairOps[op]:
				writes |= bit
			case i == 0 && xrmwOps[op]:
				reads, writes = reads|bit, writes|bit
			default:
				reads |= bit
			}
		}
	}
	if in.Op == arm64asm.BL || in.Op == arm64asm.BLR {
		writes |= 1 << 30
	}
	if named == 0 {
		roles = true
	}
	return named, reads, writes, roles
}

// xmentions returns the registers an argument uses (as operand, base, index or
// shifted source) and, for a memory operand with write-back, the base it updates.
func xmentions(a arm64asm.Arg) (used []int, writeback int) {
	writeback = -1
	switch a := a.(type) {
	case arm64asm.Reg, arm64asm.RegSP:
		if n := xregNum(a); n >= 0 {
			used = append(used, n)
		}
	case arm64asm.MemImmediate:
		if n := xregNum(a.Base); n >= 0 {
			used = append(used, n)
			if a.Mode != arm64asm.AddrOffset {
				writeback = n
			}
		}
		if a.Mode == arm64asm.AddrPostReg {
			// Post-index by a register (LD1 {V0.16B}, [X0], X2): its field is
			// unexported; it is printed after the brackets.
			_, post, _ := strings.Cut(a.String(), "], ")
			if n, ok := parseGP(post); ok {
				used = append(used, n)
			}
		}
	case arm64asm.MemExtend:
		for _, r := range []arm64asm.Arg{a.Base, a.Index} {
			if n := xregNum(r); n >= 0 {
				used = append(used, n)
			}
		}
	case arm64asm.Cond, arm64asm.Imm, arm64asm.Imm64, arm64asm.ImmShift, arm64asm.PCRel:
	default:
		// DC, IC, AT and TLBI's operand (unexported): the register, if any, is printed
		// last ("CIVAC, X3").
		if s := a.String(); strings.Contains(s, ", X") {
			if n, ok := parseGP(s[strings.LastIndex(s, ", ")+2:]); ok {
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

// xregNum returns the number of the general-purpose register a names (R0..R30, not
// the zero register or SP), or -1.
func xregNum(a arm64asm.Arg) int {
	if n, _, ok := xgpReg(a); ok {
		return n
	}
	return -1
}

// xgpReg returns the number of the general-purpose register a names and whether it
// is the 64-bit form.
func xgpReg(a arm64asm.Arg) (n int, wide, ok bool) {
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

// Offline.Calls as it was with arm64asm.

// xcalls is calls as it was with arm64asm, with the fixes in fixes (see calls_test.go):
// the oracle of calls. It reads the words decodeFunc reads, and takes their branch
// targets from branchTargets (TestDecodeAgreesWithArm64asm checks those against
// arm64asm's).
func xcalls(m arch.Memory, entry, end uint64, want func(target uint64) bool, fixes int) []arch.Call {
	words, err := decodeFunc(m, entry, end)
	if err != nil {
		return nil // no call there that can be read
	}
	targets := branchTargets(words)
	var regs regValues
	var out []arch.Call
	for i, w := range words {
		in := xdecode(w.Word, w.PC)
		unknown := fixes&fixUnknown != 0 && !w.Known()
		if in.Bad || unknown || targets[in.PC] {
			// Data, or code reached from elsewhere with values this walk did not see.
			regs.clear()
			if in.Bad {
				continue
			}
		}
		switch in.Op {
		case arm64asm.BL:
			if in.Target != 0 && want(in.Target) {
				stored, _ := xflagStore(words[i+1:])
				out = append(out, regs.call(in.PC, in.Target, stored))
			}
			regs.clear() // calls clobber every register
		case arm64asm.BLR, arm64asm.SVC:
			regs.clear()
		default:
			xtrack64(in, &regs, fixes)
		}
	}
	return out
}

// xtrack64 updates regs with what in does: the value it gives its destination when
// that is a constant, and otherwise forgets every register it may write (xwritten, or
// with fixReadOnly the registers the role tables say it writes).
func xtrack64(in xinst, regs *regValues, fixes int) {
	a := in.Inst.Args
	d, wide, isReg := xgpReg(a[0])
	v, known := uint64(0), false
	switch {
	case !isReg:
	case in.Op == arm64asm.ADRP:
		v, known = in.Target, true
	case in.Op == arm64asm.ADD && in.Word&0xFF800000 == 0x91000000:
		// ADD Xd, Xn, #imm12{, LSL #12}: the low bits of an address. ImmShift hides its
		// fields, so they are read from the encoding.
		if x, ok := regs.get(int(in.Word >> 5 & 31)); ok {
			v, known = x+uint64(in.Word>>10&0xFFF)<<(12*(in.Word>>22&1)), true
		}
	case in.Op == arm64asm.MOV:
		switch src := a[1].(type) {
		case arm64asm.Imm64:
			v, known = src.Imm, true
		case arm64asm.Imm:
			v, known = uint64(src.Imm), true
		case arm64asm.Reg, arm64asm.RegSP:
			if n, _, ok := xgpReg(src); ok {
				v, known = regs.get(n)
			}
		}
	case in.Op == arm64asm.ORR:
		if z, ok := a[1].(arm64asm.Reg); ok && (z == arm64asm.XZR || z == arm64asm.WZR) {
			if imm, ok := a[2].(arm64asm.Imm64); ok {
				v, known = imm.Imm, true
			}
		}
	case in.Op == arm64asm.MOVZ, in.Op == arm64asm.MOVN, in.Op == arm64asm.MOVK:
		// The forms arm64asm does not show as MOV. Fields from the encoding again.
		shift := 16 * (in.Word >> 21 & 3)
		imm := uint64(in.Word>>5&0xFFFF) << shift
		switch in.Op {
		case arm64asm.MOVZ:
			v, known = imm, true
		case arm64asm.MOVN:
			v, known = ^imm, true
		case arm64asm.MOVK:
			if x, ok := regs.get(d); ok {
				v, known = x&^(0xFFFF<<shift)|imm, true
			}
		}
	}
	if known {
		if !wide {
			v &= 0xFFFFFFFF // a write to Wn zero-extends into Xn
		}
		regs.set(d, v)
		return
	}
	if fixes&fixReadOnly != 0 {
		_, _, writes, _ := xeffect(in)
		regs.known &^= writes
		return
	}
	for _, n := range xwritten(in) {
		regs.known &^= 1 << n
	}
}

// xwritten returns the registers in may write. It errs on the side of too many: every
// register it names, except those a store only reads.
func xwritten(in xinst) []int {
	op := in.Op.String()
	store := strings.HasPrefix(op, "ST") && !strings.HasPrefix(op, "STX") && !strings.HasPrefix(op, "STLX")
	var out []int
	for _, a := range in.Inst.Args {
		switch a := a.(type) {
		case nil:
			return out
		case arm64asm.MemImmediate:
			if n, _, ok := xgpReg(a.Base); ok && a.Mode != arm64asm.AddrOffset {
				out = append(out, n) // write-back
			}
		default:
			if n, _, ok := xgpReg(a); ok && !store {
				out = append(out, n)
			}
		}
	}
	return out
}

// xflagStore is flagStore with arm64asm, on the words that follow a call.
func xflagStore(words []inst) (uint64, bool) {
	if len(words) < 2 {
		return 0, false
	}
	insts := make([]xinst, min(len(words), 3))
	for i := range insts {
		insts[i] = xdecode(words[i].Word, words[i].PC)
	}
	if insts[0].Op != arm64asm.ADRP {
		return 0, false
	}
	t, _, ok := xgpReg(insts[0].Inst.Args[0])
	if !ok {
		return 0, false
	}
	var addr regValues
	xtrack64(insts[0], &addr, 0)
	st := insts[1]
	if add := insts[1]; add.Op == arm64asm.ADD && len(insts) > 2 {
		if d, _, ok := xgpReg(add.Inst.Args[0]); !ok || d != t {
			return 0, false
		}
		xtrack64(add, &addr, 0) // known only for ADD Xt, Xt, #imm
		st = insts[2]
	}
	// STRB Wt, [Xn, #imm12], the unsigned-offset form, with t = 0 and n = the ADRP's.
	base, ok := addr.get(t)
	if w := st.Word; !ok || st.Bad || w&0xFFC00000 != 0x39000000 || w&31 != 0 || int(w>>5&31) != t {
		return 0, false
	}
	return base + uint64(st.Word>>10&0xFFF), true
}
