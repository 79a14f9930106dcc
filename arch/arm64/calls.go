package arm64

import (
	"github.com/gosdt/gosdt/arch"
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
		if !in.Known() || targets[in.PC] {
			// Data or an instruction the decoder does not know (what it writes is not
			// known), or code reached from elsewhere with values this walk did not see.
			regs.clear()
			if !in.Known() {
				continue
			}
		}
		if in.Flow == flowBL && want(in.Target) {
			stored, _ := flagStore(insts[i+1:])
			out = append(out, regs.call(in.PC, in.Target, stored))
		}
		track(in, &regs)
	}
	return out
}

// regValues is what track knows of the general-purpose registers R0..R30: the value
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

func (r *regValues) clear() { r.known = 0 }

// call is the Call at pc to target with the argument registers r knows.
func (r *regValues) call(pc, target, stored uint64) arch.Call {
	c := arch.Call{PC: pc, Target: target, Args: make([]uint64, abiRegs), Stored: stored}
	for n := range abiRegs {
		if v, ok := r.get(n); ok {
			c.Args[n], c.Known = v, c.Known|1<<n
		}
	}
	return c
}

// track updates regs with what in does: the value it gives its destination when that
// is a constant (ADRP; ADD Xd, Xn, #imm of a known Xn; MOVZ, MOVN, MOVK; ORR of an
// immediate or a known register with the zero register), and otherwise forgets every
// register it writes. Calls (BL, BLR) and SVC forget them all.
func track(in inst, regs *regValues) {
	switch in.Flow {
	case flowBL, flowBLR, flowSVC:
		regs.clear()
		return
	}
	if in.Writes == 0 || regs.known == 0 && in.Flow != flowADRP && in.Word&0x1F800000 != 0x12800000 && in.Word&0x7F8003E0 != 0x320003E0 {
		return // nothing to forget, and no constant made (ADRP, MOVZ, MOVN, ORR #imm)
	}
	w := in.Word
	d := int(w & 31)
	v, known := uint64(0), false
	switch {
	case in.Flow == flowADRP:
		v, known = in.Target, true
	case w&0xFF800000 == 0x91000000: // ADD Xd, Xn, #imm12{, LSL #12}
		if x, ok := regs.get(int(w >> 5 & 31)); ok {
			v, known = x+uint64(w>>10&0xFFF)<<(12*(w>>22&1)), true
		}
	case w&0x1F800000 == 0x12800000 && w>>29&3 != 1: // MOVN, MOVZ, MOVK
		shift := 16 * (w >> 21 & 3)
		imm := uint64(w>>5&0xFFFF) << shift
		switch w >> 29 & 3 {
		case 0:
			v, known = ^imm, true
		case 2:
			v, known = imm, true
		case 3:
			if x, ok := regs.get(d); ok {
				v, known = x&^(0xFFFF<<shift)|imm, true
			}
		}
	case w&0x7F8003E0 == 0x320003E0: // ORR Rd, ZR, #imm
		v, known = bitMask(w>>31, w>>22&1, w>>16&63, w>>10&63)
	case w&0x7FE0FFE0 == 0x2A0003E0: // ORR Rd, ZR, Rm: MOV Rd, Rm
		v, known = regs.get(int(w >> 16 & 31))
	}
	if known && in.Writes&(1<<d) != 0 {
		if w>>31 == 0 {
			v &= 0xFFFFFFFF // a write to Wn zero-extends into Xn
		}
		regs.set(d, v)
		return
	}
	regs.known &^= in.Writes
}

// flagStore returns the address the code at the start of insts stores W0's low byte
// to: ADRP Xt, then STRB W0, [Xt, #off], or the same with ADD Xt, Xt, #lo in between.
func flagStore(insts []inst) (uint64, bool) {
	if len(insts) < 2 || insts[0].Flow != flowADRP {
		return 0, false
	}
	t, addr := int(insts[0].Word&31), insts[0].Target
	st := insts[1]
	// ADD Xt, Xt, #imm12{, LSL #12}
	if w := st.Word; w&0xFF800000 == 0x91000000 && int(w&31) == t && int(w>>5&31) == t && len(insts) > 2 {
		addr += uint64(w>>10&0xFFF) << (12 * (w >> 22 & 1))
		st = insts[2]
	}
	// STRB Wt, [Xn, #imm12], the unsigned-offset form, with t = 0 and n = the ADRP's.
	if w := st.Word; t == 31 || w&0xFFC00000 != 0x39000000 || w&31 != 0 || int(w>>5&31) != t {
		return 0, false
	}
	return addr + uint64(st.Word>>10&0xFFF), true
}
