package amd64

import (
	"bytes"
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
)

// leafEntry reads the first instruction of a function without a stack check, for a
// 5-byte JMP to a per-site slot that runs it out of line (fprobe's DESIGN.md,
// "Leaves"). The JMP must cover that instruction alone, since a goroutine may be
// parked on any instruction of a leaf: so it is written whole over an instruction of
// 5 bytes or more, and over a shorter one only its first byte, E9, is written: the
// displacement is then the 4 bytes after it as they stand (LeafEntry.Pun; DESIGN.md,
// "Punned jumps"), which must be the function's own. The instruction must do the
// same at the slot's pc (a RIP-relative operand re-encoded there), with every
// register but R12 and R13 and the flags as the function received them, and must not
// fault there (a fault would name the slot, not
// the function): moves and arithmetic that read no flags, with no RIP-relative operand
// and no memory operand but one based on SP with no index (a frameless leaf's stack
// is its caller's, mapped). No branch of the function may come back to the entry.
func leafEntry(m arch.Memory, w *arch.Walked) (arch.LeafEntry, error) {
	e := arch.LeafEntry{Addr: w.Entry}
	in, err := decodeAt(m, w.Entry)
	if err != nil {
		return e, err
	}
	raw := m.Read(w.Entry, int(in.n))
	if bytes.HasPrefix(raw, cmpSPGuard) || bytes.HasPrefix(raw, []byte{0x4C, 0x8D, 0x64, 0x24}) || bytes.HasPrefix(raw, []byte{0x4C, 0x8D, 0xA4, 0x24}) {
		return e, shapeErr(w.Entry, "a stack check at entry: not a leaf")
	}
	// Loads that may fault run in place, before the jump (fprobe's DESIGN.md, "Loads
	// in place"): a nil base faults at the function's own pc.
	for n := 0; ; n++ {
		why := displaceable(&in, raw)
		if why == "" {
			break
		}
		r, ok := inPlaceLoad(&in, raw)
		switch {
		case !ok && n == 0:
			return e, shapeErr(w.Entry, "leaf's first instruction %s: it cannot run out of line in a slot (%s)", why, in.text(m, w.Entry))
		case !ok:
			return e, shapeErr(e.Addr, "the instruction after the loads that run in place %s: it cannot run out of line in a slot (%s)", why, in.text(m, e.Addr))
		case n == maxInPlace:
			return e, shapeErr(e.Addr, "more than %d loads that may fault before an instruction a slot runs", maxInPlace)
		}
		e.Before |= 1 << r
		e.Addr += uint64(in.n)
		if e.Addr >= w.End {
			return e, shapeErr(e.Addr, "the loads that run in place reach the function's end")
		}
		if in, err = decodeAt(m, e.Addr); err != nil {
			return e, err
		}
		raw = m.Read(e.Addr, int(in.n))
	}
	if in.n < 5 {
		// Only the opcode byte is written; the displacement is the bytes after it.
		if e.Addr+5 > w.End {
			return e, shapeErr(e.Addr, "leaf's first instruction shorter than the jump of five bytes (%s, %d bytes), and the function too short for the jump's displacement to be its own bytes", in.text(m, e.Addr), in.n)
		}
		e.Pun = true
	}
	if e.Addr+uint64(in.n) > w.End {
		return e, shapeErr(e.Addr, "the first instruction runs past the function's end")
	}
	if t, ok := w.Target(w.Entry, e.Addr+1); ok {
		return e, shapeErr(t, "a branch of the function targets its entry (or an instruction up to its probe's jump): the probe would fire on each pass")
	}
	e.Orig = append([]byte(nil), raw...)
	e.Resume = e.Addr + uint64(in.n)
	if in.rip {
		// RIP-relative: the compiler's operands name the binary's own data, mapped;
		// the slot re-encodes the disp32, which precedes the immediate.
		e.Rel, e.Target = int(in.n)-int(in.immN)-4+1, in.mem(e.Addr)
		if e.Rel < 1 || int32(binary.LittleEndian.Uint32(raw[e.Rel-1:])) != in.disp {
			return e, shapeErr(e.Addr, "leaf's first instruction: a RIP-relative displacement not where the decoder expects it")
		}
	}
	e.ArgReads = argReads(m, w)
	return e, nil
}

// maxInPlace is how many loads that may fault a leaf's probe may come after.
const maxInPlace = 4

// inPlaceLoad reports whether in (bytes raw) is a load that may run in place before a
// leaf's probe, and the register it writes: MOV, MOVZX, MOVSX or MOVSXD from memory
// into a register the leaf stub saves and restores (an argument register, or DX),
// with no LOCK or segment prefix. It changes no flags and nothing but that register.
func inPlaceLoad(in *inst, raw []byte) (int, bool) {
	if in.enc != encLegacy || !in.hasRM || in.mod() == 3 || in.pfx&(pLock|pSeg) != 0 || len(raw) == 0 {
		return 0, false
	}
	switch {
	case in.m == mapOne && (in.op == 0x8A || in.op == 0x8B || in.op == 0x63):
	case in.m == map0F && (in.op == 0xB6 || in.op == 0xB7 || in.op == 0xBE || in.op == 0xBF):
	default:
		return 0, false
	}
	if _, ok := memOperand(in, raw); !ok {
		return 0, false
	}
	switch r := in.reg(); r {
	case 0, 1, 2, 3, 6, 7, 8, 9, 10, 11: // AX CX DX BX SI DI R8..R11
		if r >= 4 && r <= 7 && in.op == 0x8A && in.rex == 0 {
			return 0, false // AH, CH, DH, BH: not the register's low byte
		}
		return r, true
	}
	return 0, false
}

// argReads says which words of its argument area (from 8(SP) at entry) the function
// w, a leaf, reads: those its SP-based memory operands name; all when SP is used
// otherwise (copied, an address taken) or an instruction cannot be read. A leaf with
// a frame (PUSHQ BP; MOVQ SP, BP; SUBQ $n, SP) names its arguments from a lower SP:
// where the pc tables say how far SP is below the entry's (w.SPDelta), its SP-based
// operands are read from the entry's SP, the frame's own moves of SP are not uses,
// and an address taken of a local (below the return address) takes none of the
// argument area: Go reaches nothing beyond a local through its address.
func argReads(m arch.Memory, w *arch.Walked) uint64 {
	const all = ^uint64(0)
	var r uint64
	it := insts(m, w, w.End)
	for it.next() {
		in := &it.in
		if in.flow == flowCall || in.flow == flowCallInd {
			continue // the runtime's panics: they do not return
		}
		raw := m.Read(it.pc, int(in.n))
		var delta int64
		if w.SPDelta != nil {
			if delta = int64(w.SPDelta(it.pc)); delta < 0 {
				if len(raw) == 1 && raw[0] == 0xCC {
					continue // the linker's padding after the code, which the tables do not cover
				}
				return all
			}
		}
		if in.enc == encLegacy && in.m == mapOne && in.op >= 0x50 && in.op <= 0x5F {
			if w.SPDelta != nil && len(raw) == 1 && (in.op == 0x55 || in.op == 0x5D) {
				continue // PUSHQ BP, POPQ BP: the frame's, which the pc tables count
			}
			return all // other pushes and pops: not in a leaf's code
		}
		if !in.hasRM {
			continue
		}
		if in.mod() == 3 {
			if w.SPDelta != nil && frameMove(raw) {
				continue
			}
			if in.rm() == rSP || in.reg() == rSP && in.enc == encLegacy && in.m == mapOne && !groupOp(in.op) {
				return all // SP (or, conservatively, register 4 of another kind) as an operand
			}
			continue
		}
		if in.reg() == rSP && in.enc == encLegacy && in.m == mapOne && !groupOp(in.op) {
			return all // MOVQ SP, mem and the like
		}
		op, ok := memOperand(in, raw)
		if !ok || op.base == rBP || op.index == rBP {
			return all // BP, the frame pointer, is no base the compiler uses for a leaf
		}
		if op.base != rSP && op.index != rSP {
			continue
		}
		d := op.disp - delta // from the entry's SP
		if op.index >= 0 {
			if w.SPDelta != nil && op.base == rSP && d < 0 {
				continue // an element of a local array, bounds-checked within it
			}
			return all // an index
		}
		if in.m == mapOne && in.op == 0x8D { // LEA
			if w.SPDelta != nil && d < 0 {
				continue // a local's address
			}
			return all
		}
		if w.SPDelta != nil && d <= -16 {
			continue // a local, whole below the return address (16 bytes at most)
		}
		if d < 8 {
			return all // the return address or below, where no frame says what is there
		}
		// The operand's width is at most 16 bytes (an SSE move): its word and the next.
		j := (d - 8) / 8
		for k := j; k <= (d-8+15)/8 && k < 64; k++ {
			r |= 1 << k
		}
		if j >= 64 {
			return all
		}
	}
	if it.err != nil {
		return all
	}
	return r
}

// groupOp reports whether a one-byte-map opcode's ModRM.reg extends the opcode (an
// immediate or shift group, INC, DEC, NOT, NEG...) instead of naming a register.
func groupOp(op byte) bool {
	switch op {
	case 0x80, 0x81, 0x83, 0xC0, 0xC1, 0xC6, 0xC7, 0xD0, 0xD1, 0xD2, 0xD3, 0xF6, 0xF7, 0xFE, 0xFF:
		return true
	}
	return false
}

// frameMove reports whether raw is a frame's move of SP: SUBQ or ADDQ $imm, SP, or
// MOVQ SP, BP.
func frameMove(raw []byte) bool {
	switch {
	case len(raw) == 4 && raw[0] == 0x48 && raw[1] == 0x83 && (raw[2] == 0xEC || raw[2] == 0xC4):
		return true // SUBQ, ADDQ $imm8, SP
	case len(raw) == 7 && raw[0] == 0x48 && raw[1] == 0x81 && (raw[2] == 0xEC || raw[2] == 0xC4):
		return true // SUBQ, ADDQ $imm32, SP
	case len(raw) == 3 && raw[0] == 0x48 && raw[1] == 0x89 && raw[2] == 0xE5:
		return true // MOVQ SP, BP
	}
	return false
}

// Directions of a legacy instruction's general-purpose operands, for the check that
// it writes no SP.
const (
	dstRM  = 1 // ModRM.rm is written (or only read: CMP, TEST; refused alike when SP)
	dstReg = 2 // ModRM.reg is written
	dstOp  = 3 // the register in the opcode's low bits is written (MOV r, imm)
	dstNo  = 4 // no general-purpose register operand is written (SSE)
)

// displaceable says why the instruction in (bytes raw) may not run at another pc with
// R12, R13 and the flags changed, or "" if it may.
func displaceable(in *inst, raw []byte) string {
	if in.flow != flowNext {
		return "passes control (not relocated)"
	}
	if in.enc != encLegacy {
		return "is VEX or EVEX encoded (not a form the slot runs)"
	}
	if in.pfx&(pLock|pSeg) != 0 {
		return "has a LOCK or segment prefix"
	}
	if len(raw) == 1 && in.m == mapOne && in.op == 0x55 {
		// PUSHQ BP, a small frame's first instruction: it writes below the leaf's SP
		// what it would have in place. For that one instruction the slot's SP is 8
		// below its pc tables' (delta 0): a profiling signal there finds BP where the
		// return address would be, and its traceback stops (fprobe's DESIGN.md,
		// "Punned jumps").
		return ""
	}

	dst, mem := 0, true // mem: a memory operand is accessed (LEA's is not)
	switch d := in.regDigit(); in.m {
	case mapOne:
		switch op := in.op; {
		case op <= 0x3D && op&7 <= 5 && op>>3 != 2 && op>>3 != 3: // ADD OR AND SUB XOR CMP; not ADC, SBB
			switch op & 7 {
			case 0, 1:
				dst = dstRM
			case 2, 3:
				dst = dstReg
			default: // AL/EAX, imm
				dst = dstNo
			}
		case op == 0x80 || op == 0x81 || op == 0x83:
			if d == 2 || d == 3 {
				return "reads the flags (ADC, SBB)"
			}
			dst = dstRM
		case op == 0x84 || op == 0x85 || op == 0x88 || op == 0x89:
			dst = dstRM
		case op == 0x8A || op == 0x8B || op == 0x63 || op == 0x69 || op == 0x6B:
			dst = dstReg
		case op == 0x8D: // LEA
			dst, mem = dstReg, false
		case op == 0xC6 || op == 0xC7:
			if d != 0 {
				return "is not a form the slot runs"
			}
			dst = dstRM
		case op >= 0xB0 && op <= 0xBF:
			dst = dstOp
		case op == 0xA8 || op == 0xA9:
			dst = dstNo
		case op == 0xC0 || op == 0xC1 || op == 0xD0 || op == 0xD1 || op == 0xD3:
			if d == 2 || d == 3 {
				return "reads the flags (RCL, RCR)"
			}
			dst = dstRM
		case op == 0xF6 || op == 0xF7:
			if d == 1 || d >= 6 {
				return "may fault (DIV, IDIV) or is not a form the slot runs"
			}
			dst = dstRM
		}
	case map0F:
		switch op := in.op; {
		case (op == 0x6E || op == 0x7E || op == 0xEF || op == 0xD6 || op == 0x2A || op == 0x2C || op == 0x2D) && in.pfx&(p66|pF2|pF3) == 0:
			return "is an MMX instruction (not a form the slot runs)"
		case op == 0xB6 || op == 0xB7 || op == 0xBE || op == 0xBF || op == 0xAF:
			dst = dstReg
		case op == 0x1F: // NOP r/m: reads no memory
			dst, mem = dstNo, false
		case op == 0x10 || op == 0x11 || op == 0x57 || op == 0x58 || op == 0x59 || op == 0x5C || op == 0x5E ||
			op == 0x5A || op == 0x2A || op == 0x2C || op == 0x2D || op == 0x6E || op == 0x7E || op == 0xD6 || op == 0xEF:
			// Unaligned moves and scalar arithmetic (the packed forms of 57, 58, 59, 5C,
			// 5E and EF with a memory operand need alignment, refused below).
			dst = dstNo
			if in.mod() != 3 && in.pfx&(pF2|pF3) == 0 && op != 0x10 && op != 0x11 && op != 0x6E && op != 0x7E && op != 0xD6 && op != 0x2A {
				return "may fault (an aligned packed memory operand)"
			}
			if op == 0x2C || op == 0x2D || op == 0x7E && in.pfx&pF3 == 0 {
				dst = dstReg // to a general-purpose register
			}
			if op == 0x7E && in.pfx&p66 != 0 {
				dst = dstRM
			}
		}
	}
	if dst == 0 {
		return "is not a form the slot runs"
	}
	switch {
	case dst == dstRM && in.mod() == 3 && in.rm() == rSP,
		dst == dstReg && in.reg() == rSP,
		dst == dstOp && int(in.op&7)|int(in.rex&1)<<3 == rSP:
		return "names SP"
	}
	if in.hasRM && in.mod() != 3 {
		op, ok := memOperand(in, raw)
		if !ok {
			return "has a memory operand the decoder does not read"
		}
		if mem && !op.rip && (op.base != rSP || op.index >= 0) {
			return "may fault (its memory operand is not SP-based)"
		}
	}
	return ""
}

// retJump reads the returns of a function whose frame is gone at its RET (every Go
// function's is) for 5-byte JMPs to a per-site slot (fprobe's DESIGN.md, "Returns by
// a jump"). A goroutine may be parked on any instruction, so a JMP may cover the RET
// alone and bytes where no instruction of the function starts: the linker's INT3
// padding after the function's code (code: where its pc tables end), never executed
// and never a pc a goroutine has. A RET without that room (one followed by code, or
// by padding a branch lands in) takes a punned jump instead: only its byte is
// written, the displacement the 4 bytes after it as they stand (FuncReturn.Pun),
// which must be the function's own and hold no other RET. No jump may leave the
// function (a return the probe would not see).
func retJump(m arch.Memory, w *arch.Walked, code uint64) ([]arch.FuncReturn, error) {
	if code <= w.Entry || code > w.End {
		return nil, shapeErr(w.Entry, "the function's code ends at %#x, outside its range", code)
	}
	var rets []uint64
	it := insts(m, w, code)
	for it.next() {
		switch pc := it.pc; it.in.flow {
		case flowRet:
			if b := m.Read(pc, 1); it.in.n != 1 || len(b) != 1 || b[0] != 0xC3 {
				return nil, shapeErr(pc, "a return that is not a 1-byte RET")
			}
			rets = append(rets, pc)
		case flowJmp, flowJcc:
			if t := it.in.target(pc); t < w.Entry || t >= code {
				return nil, shapeErr(pc, "a jump out of the function's code (to %#x): a return the probe would not see", t)
			}
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	if len(rets) == 0 {
		return nil, shapeErr(w.Entry, "no return: the function never returns")
	}
	out := make([]arch.FuncReturn, 0, len(rets))
	for k, ret := range rets {
		pad := m.Read(ret+1, 4)
		if _, landed := w.Target(ret+1, ret+5); ret+1 == code && ret+5 <= w.End && bytes.Equal(pad, []byte{0xCC, 0xCC, 0xCC, 0xCC}) && !landed {
			out = append(out, arch.FuncReturn{Addr: ret, Ret: ret, Orig: []byte{0xC3, 0xCC, 0xCC, 0xCC, 0xCC}})
			continue
		}
		switch {
		case ret+5 > w.End:
			return nil, shapeErr(ret, "a RET too near the function's end for a jump, whose displacement would be the next function's bytes")
		case k+1 < len(rets) && rets[k+1] < ret+5:
			return nil, shapeErr(ret, "another RET within the 4 bytes after this one, which its punned jump reads as its displacement")
		}
		out = append(out, arch.FuncReturn{Addr: ret, Ret: ret, Orig: []byte{0xC3}, Pun: true})
	}
	return out, nil
}
