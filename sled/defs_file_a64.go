package sled

import (
	"debug/gosym"
	"strings"

	"github.com/gosdt/gosdt/arch/arm64"
	"golang.org/x/arch/arm64/arm64asm"
)

// On arm64 a definition, `var tick = sdt.Define1[int]("e2e", "tick", "i")`, compiles to
//
//	ADRP R0, dict@PAGE; ADD R0, R0, #dict@PAGEOFF    the dictionary (generic Defines only)
//	ADRP R1, "e2e"@PAGE; ADD R1, R1, #...; ORR R2, ZR, #3   each string: pointer, length
//	...                                               (MOVD R4, R8 when lengths repeat)
//	BL   sdt.Define1[go.shape.int]
//	ADRP R27, tick@PAGE; STRB W0, [R27, #tick@PAGEOFF]   the result's flag byte
//
// Only that much is followed: addresses from ADRP and ADD, immediates from the mov forms
// (MOVZ, MOVN, MOVK, ORR from the zero register) and copies between registers.

// a64ABIRegs is Go's integer argument register order on arm64: R0..R15.
var a64ABIRegs = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// arm64Defines reads the Define calls of one arm64 function.
func (s initScan) arm64Defines(fn *gosym.Func) []Definition {
	insts, err := arm64.DecodeFunc(s.mem, fn.Entry, fn.End, nil)
	if err != nil {
		return nil // no Define there that can be read
	}
	var defs []Definition
	regs := map[int]uint64{} // register number -> its known 64-bit value
	targets := arm64.BranchTargets(insts)
	for i, in := range insts {
		if in.Bad || targets[in.PC] {
			// Data, or code reached from elsewhere with values this walk did not see.
			clear(regs)
			if in.Bad {
				continue
			}
		}
		switch in.Op {
		case arm64asm.BL:
			name := s.syms.name(uintptr(in.Target))
			if in.Target != 0 && strings.HasPrefix(name, s.define) {
				if d, ok := a64ReadDefine(s, insts[i+1:], regs, strings.Contains(name, "[")); ok {
					defs = append(defs, d)
				}
			}
			clear(regs) // calls clobber every register
		case arm64asm.BLR, arm64asm.SVC:
			clear(regs)
		default:
			a64Track(in, regs)
		}
	}
	return defs
}

// a64Track updates regs with what in does: the value it gives its destination when
// that is a constant, and otherwise forgets every register it may write.
func a64Track(in arm64.Inst, regs map[int]uint64) {
	a := in.Inst.Args
	d, wide, isReg := a64Reg(a[0])
	v, known := uint64(0), false
	switch {
	case !isReg:
	case in.Op == arm64asm.ADRP:
		if rel, ok := a[1].(arm64asm.PCRel); ok {
			v, known = in.PC&^0xFFF+uint64(rel), true
		}
	case in.Op == arm64asm.ADD && in.Word&0xFF800000 == 0x91000000:
		// ADD Xd, Xn, #imm12{, LSL #12}: the low bits of an address. ImmShift hides its
		// fields, so they are read from the encoding.
		if x, ok := regs[int(in.Word>>5&31)]; ok {
			v, known = x+uint64(in.Word>>10&0xFFF)<<(12*(in.Word>>22&1)), true
		}
	case in.Op == arm64asm.MOV:
		switch src := a[1].(type) {
		case arm64asm.Imm64:
			v, known = src.Imm, true
		case arm64asm.Imm:
			v, known = uint64(src.Imm), true
		case arm64asm.Reg, arm64asm.RegSP:
			if n, _, ok := a64Reg(src); ok {
				v, known = regs[n]
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
			if x, ok := regs[d]; ok {
				v, known = x&^(0xFFFF<<shift)|imm, true
			}
		}
	}
	if known {
		if !wide {
			v &= 0xFFFFFFFF // a write to Wn zero-extends into Xn
		}
		regs[d] = v
		return
	}
	for _, n := range a64Written(in) {
		delete(regs, n)
	}
}

// a64Written returns the registers in may write. It errs on the side of too many: every
// register it names, except those a store only reads.
func a64Written(in arm64.Inst) []int {
	op := in.Op.String()
	store := strings.HasPrefix(op, "ST") && !strings.HasPrefix(op, "STX") && !strings.HasPrefix(op, "STLX")
	var out []int
	for _, a := range in.Inst.Args {
		switch a := a.(type) {
		case nil:
			return out
		case arm64asm.MemImmediate:
			if n, _, ok := a64Reg(a.Base); ok && a.Mode != arm64asm.AddrOffset {
				out = append(out, n) // write-back
			}
		default:
			if n, _, ok := a64Reg(a); ok && !store {
				out = append(out, n)
			}
		}
	}
	return out
}

// a64Reg returns the number of the general-purpose register a names (R0..R30, not the
// zero register or SP) and whether it is the 64-bit form.
func a64Reg(a arm64asm.Arg) (n int, wide, ok bool) {
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

// a64ReadDefine reads the strings of a Define call from regs and finds the variable in
// the store of the result's flag byte right after the call.
func a64ReadDefine(s initScan, after []arm64.Inst, regs map[int]uint64, generic bool) (Definition, bool) {
	rs := a64ABIRegs
	if generic {
		rs = rs[1:] // the dictionary
	}
	strs := stringArgs(s.f, regs, rs)
	flag, ok := a64FlagStore(after)
	if len(strs) < 2 || !ok {
		return Definition{}, false
	}
	return Definition{Flag: flag, Provider: strs[0], Name: strs[1], Args: strs[2:]}, true
}

// a64FlagStore returns the address the code at the start of insts stores W0's low byte
// to: ADRP Xt, then STRB W0, [Xt, #off], or the same with ADD Xt, Xt, #lo in between.
func a64FlagStore(insts []arm64.Inst) (uint64, bool) {
	if len(insts) < 2 || insts[0].Op != arm64asm.ADRP {
		return 0, false
	}
	t, _, ok := a64Reg(insts[0].Inst.Args[0])
	if !ok {
		return 0, false
	}
	addr := map[int]uint64{}
	a64Track(insts[0], addr)
	st := insts[1]
	if add := insts[1]; add.Op == arm64asm.ADD && len(insts) > 2 {
		if d, _, ok := a64Reg(add.Inst.Args[0]); !ok || d != t {
			return 0, false
		}
		a64Track(add, addr) // known only for ADD Xt, Xt, #imm
		st = insts[2]
	}
	// STRB Wt, [Xn, #imm12], the unsigned-offset form, with t = 0 and n = the ADRP's.
	base, ok := addr[t]
	if w := st.Word; !ok || st.Bad || w&0xFFC00000 != 0x39000000 || w&31 != 0 || int(w>>5&31) != t {
		return 0, false
	}
	return base + uint64(st.Word>>10&0xFFF), true
}
