package arm64

import (
	"strings"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/arm64/arm64asm"
)

// A probe definition, `var tick = sdt.Define1[int]("e2e", "tick", "i")`, compiles to
//
//	ADRP R0, dict@PAGE; ADD R0, R0, #dict@PAGEOFF    the dictionary (generic Defines only)
//	ADRP R1, "e2e"@PAGE; ADD R1, R1, #...; ORR R2, ZR, #3   each string: pointer, length
//	...                                               (MOVD R4, R8 when lengths repeat)
//	BL   sdt.Define1[go.shape.int]
//	ADRP R27, tick@PAGE; STRB W0, [R27, #tick@PAGEOFF]   the result's flag byte
//
// Only that much is followed by calls: addresses from ADRP and ADD, immediates from
// the mov forms (MOVZ, MOVN, MOVK, ORR from the zero register) and copies between
// registers.

// calls reads the function [entry, end) (Offline.Calls) and reports, at each BL that want
// accepts, the argument registers it knows and the store of W0's low byte after it.
func calls(m arch.Memory, entry, end uint64, want func(target uint64) bool, _ func(pc uint64) string) []arch.Call {
	insts, err := decodeFunc(m, entry, end)
	if err != nil {
		return nil // no call there that can be read
	}
	var out []arch.Call
	var regs regValues
	targets := branchTargets(insts)
	for i, in := range insts {
		if in.Bad || targets[in.PC] {
			// Data, or code reached from elsewhere with values this walk did not see.
			regs.clear()
			if in.Bad {
				continue
			}
		}
		switch in.Op {
		case arm64asm.BL:
			if in.Target != 0 && want(in.Target) {
				c := arch.Call{PC: in.PC, Target: in.Target, Args: make([]uint64, abiRegs)}
				for r := range abiRegs {
					if v, ok := regs.get(r); ok {
						c.Args[r], c.Known = v, c.Known|1<<r
					}
				}
				c.Stored, _ = flagStore(insts[i+1:])
				out = append(out, c)
			}
			regs.clear() // calls clobber every register
		case arm64asm.BLR, arm64asm.SVC:
			regs.clear()
		default:
			track64(in, &regs)
		}
	}
	return out
}

// regValues is what track64 knows of the general-purpose registers R0..R30: the value
// each holds, where it is a constant.
type regValues struct {
	v     [31]uint64
	known uint32
}

func (r *regValues) get(n int) (uint64, bool) {
	if n < 0 || n > 30 || r.known&(1<<n) == 0 {
		return 0, false
	}
	return r.v[n], true
}

func (r *regValues) set(n int, v uint64) {
	if n >= 0 && n <= 30 {
		r.v[n], r.known = v, r.known|1<<n
	}
}

func (r *regValues) forget(n int) {
	if n >= 0 && n <= 30 {
		r.known &^= 1 << n
	}
}

func (r *regValues) clear() { r.known = 0 }

// track64 updates regs with what in does: the value it gives its destination when
// that is a constant, and otherwise forgets every register it may write.
func track64(in inst, regs *regValues) {
	a := in.Inst.Args
	d, wide, isReg := gpReg(a[0])
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
			if n, _, ok := gpReg(src); ok {
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
	for _, n := range written(in) {
		regs.forget(n)
	}
}

// written returns the registers in may write. It errs on the side of too many: every
// register it names, except those a store only reads.
func written(in inst) []int {
	op := in.Op.String()
	store := strings.HasPrefix(op, "ST") && !strings.HasPrefix(op, "STX") && !strings.HasPrefix(op, "STLX")
	var out []int
	for _, a := range in.Inst.Args {
		switch a := a.(type) {
		case nil:
			return out
		case arm64asm.MemImmediate:
			if n, _, ok := gpReg(a.Base); ok && a.Mode != arm64asm.AddrOffset {
				out = append(out, n) // write-back
			}
		default:
			if n, _, ok := gpReg(a); ok && !store {
				out = append(out, n)
			}
		}
	}
	return out
}

// flagStore returns the address the code at the start of insts stores W0's low byte
// to: ADRP Xt, then STRB W0, [Xt, #off], or the same with ADD Xt, Xt, #lo in between.
func flagStore(insts []inst) (uint64, bool) {
	if len(insts) < 2 || insts[0].Op != arm64asm.ADRP {
		return 0, false
	}
	t, _, ok := gpReg(insts[0].Inst.Args[0])
	if !ok {
		return 0, false
	}
	var addr regValues
	track64(insts[0], &addr)
	st := insts[1]
	if add := insts[1]; add.Op == arm64asm.ADD && len(insts) > 2 {
		if d, _, ok := gpReg(add.Inst.Args[0]); !ok || d != t {
			return 0, false
		}
		track64(add, &addr) // known only for ADD Xt, Xt, #imm
		st = insts[2]
	}
	// STRB Wt, [Xn, #imm12], the unsigned-offset form, with t = 0 and n = the ADRP's.
	base, ok := addr.get(t)
	if w := st.Word; !ok || st.Bad || w&0xFFC00000 != 0x39000000 || w&31 != 0 || int(w>>5&31) != t {
		return 0, false
	}
	return base + uint64(st.Word>>10&0xFFF), true
}
