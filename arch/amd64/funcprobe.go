package amd64

import (
	"bytes"
	"encoding/binary"
	"strings"

	"github.com/gosdt/gosdt/arch"
)

// The shapes of a Go function's prologue, morestack block and epilogues on amd64
// (cmd/internal/obj/x86/obj6.go, stacksplit and the epilogue of preprocess), as the
// entry and return stubs of function probes take them (arch.FuncEntry, FuncReturn):
//
//	small frame:  CMPQ SP, 16(R14)            49 3B 66 10
//	              JLS  morestack               76 rel8 | 0F 86 rel32
//	large frame:  LEAQ -N(SP), R12             4C 8D 64 24 d8 | 4C 8D A4 24 d32
//	              CMPQ R12, 16(R14)            4D 3B 66 10
//	              JLS  morestack
//	then          PUSHQ BP; MOVQ SP, BP; [SUBQ $N, SP]
//
//	morestack:    MOV{B,W,L,Q} reg, d(SP) / MOVS{S,D} Xn, d(SP) ...   the register arguments
//	              [NOPs] CALL runtime.morestack_noctxt (or runtime.morestack: closure context live)
//	              MOV... d(SP), reg ...  [NOPs]  JMP entry
//
//	epilogue:     ADDQ $N, SP; POPQ BP; [NOPs] RET    48 83 C4 ib 5D | 48 81 C4 id 5D | 48 83 EC 80 5D (SUBQ $-128)
//
// The entry's call (5 bytes) goes over the small frame's CMPQ and JLS (6 or 10 bytes:
// NOPs fill the rest) or over the large frame's LEAQ (5 or 8). A goroutine can be
// stopped on neither JLS (the compiler marks it unsafe for asynchronous preemption,
// and no call returns into it); it can on a large frame's CMPQ, which stays. A return's call goes over ADDQ $id (7
// bytes; POPQ stays), or over ADDQ $ib and POPQ (5 bytes) where a goroutine may be
// parked on POPQ: there the call's displacement must end in POPQ's byte (FuncReturn.Pad).

// Go's integer argument registers in ABI order (AX BX CX DI SI R8 R9 R10 R11), as
// register numbers; the floating-point ones are X0..X14.
var intArgRegs = [...]int{0, 3, 1, 7, 6, 8, 9, 10, 11}

const floatArgRegs = 15

// abiIndex is the ABI index of integer register r, -1 if it passes no argument.
func abiIndex(r int) int {
	for i, x := range intArgRegs {
		if x == r {
			return i
		}
	}
	return -1
}

var (
	cmpSPGuard  = []byte{0x49, 0x3B, 0x66, 0x10} // CMPQ SP, 16(R14)
	cmpR12Guard = []byte{0x4D, 0x3B, 0x66, 0x10} // CMPQ R12, 16(R14)
)

// funcEntry reads the prologue of the function walked in w and its morestack block.
// name names the function at a pc (the block must call runtime.morestack or
// runtime.morestack_noctxt).
func funcEntry(m arch.Memory, w *arch.Walked, name func(pc uint64) string) (arch.FuncEntry, error) {
	e := arch.FuncEntry{Addr: w.Entry}
	b := m.Read(w.Entry, 16)
	pc := w.Entry
	switch {
	case bytes.HasPrefix(b, cmpSPGuard):
		pc += uint64(len(cmpSPGuard))
	case len(b) >= 9 && bytes.Equal(b[:4], []byte{0x4C, 0x8D, 0x64, 0x24}) && bytes.Equal(b[5:9], cmpR12Guard):
		e.Check = int64(int8(b[4]))
		pc += 9
	case len(b) >= 12 && bytes.Equal(b[:4], []byte{0x4C, 0x8D, 0xA4, 0x24}) && bytes.Equal(b[8:12], cmpR12Guard):
		e.Check = int64(int32(binary.LittleEndian.Uint32(b[4:])))
		pc += 12
	case len(b) >= 3 && bytes.Equal(b[:3], []byte{0x49, 0x89, 0xE4}):
		// A frame of StackBig (4 KiB) and more: its check subtracts the frame from a
		// copy of SP and tests the borrow first (obj6.go, stacksplit).
		return e, shapeErr(w.Entry, "a huge frame's stack check (MOVQ SP, R12; SUBQ $N, R12; JCS ...): a prologue the entry stub does not take")
	case len(b) >= 4 && bytes.Equal(b[:4], []byte{0x55, 0x48, 0x89, 0xE5}):
		// A leaf with a frame under 128 bytes: the assembler gives it no stack check
		// (cmd/internal/obj/x86/obj6.go, the leaf search). See the doc of fprobe.
		return e, shapeErr(w.Entry, "no stack check at entry: a leaf with a small frame (the assembler makes it nosplit) or a go:nosplit function: no check for the call to replace, and PUSHQ BP, MOVQ SP, BP are instructions a goroutine may be parked on, too short for it")
	case len(b) > 0:
		return e, shapeErr(w.Entry, "no stack check at entry (% x): a frameless leaf (or a prologue of another shape): no check for the call to replace, no morestack block to read the arguments' spill slots from", b[:min(len(b), 8)])
	default:
		return e, shapeErr(w.Entry, "no code mapped")
	}
	jls, err := decodeAt(m, pc)
	if err != nil {
		return e, err
	}
	if !jls.isJcc(0x6) { // JBE, the assembler's JLS
		return e, shapeErr(pc, "stack check not followed by JLS: %s", jls.text(m, pc))
	}
	e.Morestack = jls.target(pc)
	if e.Check == 0 {
		e.Resume = pc + uint64(jls.n) // the CMPQ and the JLS
	} else {
		// Only the LEAQ: the compiler's unsafe point starts after the CMPQ
		// (cmd/internal/obj/x86/obj6.go, stacksplit), so a goroutine may be parked on
		// a large frame's CMPQ, which must stay an instruction.
		e.Resume = w.Entry + uint64(pc-w.Entry-uint64(len(cmpR12Guard))) // the LEAQ
	}
	if e.Resume-w.Entry < 5 {
		return e, shapeErr(w.Entry, "%d bytes before the function's first instruction that stays: a call needs 5", e.Resume-w.Entry)
	}
	if t, ok := w.Target(w.Entry+1, e.Resume); ok {
		return e, shapeErr(t, "a branch lands inside the prologue the call would replace")
	}
	if e.Morestack < w.Entry || e.Morestack >= w.End {
		return e, shapeErr(pc, "JLS leaves the function (%#x)", e.Morestack)
	}
	e.Orig = m.Read(w.Entry, int(e.Resume-w.Entry))
	if err := readMorestack(m, w, &e, name); err != nil {
		return e, err
	}
	return e, nil
}

// readMorestack reads the morestack block at e.Morestack: the spills, the call, the
// reloads that mirror them, and the jump back to the entry.
func readMorestack(m arch.Memory, w *arch.Walked, e *arch.FuncEntry, name func(pc uint64) string) error {
	pc := e.Morestack
	var reloads []arch.Spill
	called := false
	for n := 0; n < 64; n++ {
		in, err := decodeAt(m, pc)
		if err != nil {
			return err
		}
		next := pc + uint64(in.n)
		switch {
		case in.isNOP():
		case !called && in.flow == flowCall:
			switch strings.TrimSuffix(name(in.target(pc)), ".abi0") {
			case "runtime.morestack":
				e.Context = true
			case "runtime.morestack_noctxt":
			default:
				return shapeErr(pc, "the morestack block calls %s", name(in.target(pc)))
			}
			called = true
		case in.flow == flowJmp:
			if !called || in.target(pc) != w.Entry {
				return shapeErr(pc, "the morestack block jumps to %#x, not back to the entry", in.target(pc))
			}
			if !arch.SameSpills(e.Spills, reloads) {
				return shapeErr(pc, "the morestack block reloads %v, not what it spilled (%v)", reloads, e.Spills)
			}
			return nil
		case !called:
			s, ok := spillOf(&in, m.Read(pc, int(in.n)), true)
			if !ok {
				return shapeErr(pc, "not a spill of an argument register in the morestack block: %s", in.text(m, pc))
			}
			e.Spills = append(e.Spills, s)
		default:
			s, ok := spillOf(&in, m.Read(pc, int(in.n)), false)
			if !ok {
				return shapeErr(pc, "not a reload of an argument register in the morestack block: %s", in.text(m, pc))
			}
			reloads = append(reloads, s)
		}
		if in.flow != flowNext && in.flow != flowCall {
			return shapeErr(pc, "unexpected control transfer in the morestack block: %s", in.text(m, pc))
		}
		pc = next
	}
	return shapeErr(e.Morestack, "a morestack block longer than any the compiler writes")
}

// spillOf reads a store of an argument register to d(SP) (store) or a load of one
// from d(SP): MOV{B,W,L,Q}, MOVZX (a reload of a byte or a word), MOVS{S,D}; b is the
// instruction's bytes.
func spillOf(in *inst, b []byte, store bool) (arch.Spill, bool) {
	var s arch.Spill
	if in.enc != encLegacy || !in.hasRM || in.immN != 0 || in.pfx&(pLock|pSeg) != 0 || len(b) != int(in.n) {
		return s, false
	}
	off, ok := spDisp(in, b)
	if !ok || off < 8 {
		return s, false // not d(SP), or below the first argument slot: the return address
	}
	s.Off = off - 8
	reg := in.reg()
	switch {
	case in.m == mapOne && store && in.op == 0x88:
		s.Size = 1
	case in.m == mapOne && store && in.op == 0x89 && in.pfx == p66:
		s.Size = 2
	case in.m == mapOne && in.op == 0x89 && store || in.m == mapOne && in.op == 0x8B && !store:
		if in.pfx&p66 != 0 {
			s.Size = 2
		} else if in.w() {
			s.Size = 8
		} else {
			s.Size = 4
		}
	case in.m == map0F && !store && (in.op == 0xB6 || in.op == 0xB7) && in.pfx == 0:
		s.Size = 1
		if in.op == 0xB7 {
			s.Size = 2
		}
	case in.m == map0F && (store && in.op == 0x11 || !store && in.op == 0x10) && (in.pfx == pF2 || in.pfx == pF3):
		s.Size = 8
		if in.pfx == pF3 {
			s.Size = 4
		}
		if reg >= floatArgRegs {
			return s, false
		}
		s.Reg = arch.FloatReg + uint8(reg)
	default:
		return s, false
	}
	if s.Reg == 0 { // an integer register
		i := abiIndex(reg)
		if i < 0 {
			return s, false
		}
		s.Reg = uint8(i)
	}
	return s, true
}

// spDisp is the displacement of a d(SP) memory operand: ModRM mod 01 or 10 with rm 100
// and a SIB of base SP and no index (24), no REX.B or REX.X; the displacement follows
// the SIB and ends the instruction (there is no immediate).
func spDisp(in *inst, b []byte) (int32, bool) {
	if in.mod() == 0 || in.mod() == 3 || in.modrm&7 != 4 || in.rex&3 != 0 || in.rip {
		return 0, false
	}
	n := 1
	if in.mod() == 2 {
		n = 4
	}
	if len(b) < n+2 || b[len(b)-n-1] != 0x24 || b[len(b)-n-2] != in.modrm {
		return 0, false
	}
	if n == 1 {
		return int32(int8(b[len(b)-1])), true
	}
	return int32(binary.LittleEndian.Uint32(b[len(b)-4:])), true
}

// funcReturns finds every return of the function walked in w, each of which must be
// an epilogue of the shape the return stub takes; anything else that leaves the
// function (a return without that epilogue, a jump out of it) is an error: a return
// probe must see every return.
func funcReturns(m arch.Memory, w *arch.Walked) ([]arch.FuncReturn, error) {
	var rets []arch.FuncReturn
	it := insts(m, w, w.End)
	for it.next() {
		switch pc := it.pc; it.in.flow {
		case flowRet:
			r, err := epilogue(m, w, pc)
			if err != nil {
				return nil, err
			}
			rets = append(rets, r)
		case flowJmp:
			if t := it.in.target(pc); t < w.Entry || t >= w.End {
				return nil, shapeErr(pc, "a jump out of the function (to %#x): a return the probe would not see", t)
			}
		}
		// An indirect JMP stays: the compiler jumps through registers only for jump
		// tables, whose targets are the function's own blocks (tail calls are direct).
	}
	if it.err != nil {
		return nil, it.err
	}
	if len(rets) == 0 {
		return nil, shapeErr(w.Entry, "no return: the function never returns")
	}
	return rets, nil
}

// epilogue reads the epilogue that ends at the RET at ret: ADDQ $N, SP (or SUBQ
// $-128, SP, the assembler's imm8 form of ADDQ $128), POPQ BP, then the NOPs the
// assembler may put before the RET so that it does not end on a 32-byte boundary (the
// JCC erratum's padding, cmd/internal/obj/x86/asm6.go), then RET. The call covers the
// ADDQ (and the POPQ with imm8); the NOPs and the RET stay, and the stub returns to
// the RET itself: a goroutine parked on a NOP resumes on it, then returns.
func epilogue(m arch.Memory, w *arch.Walked, ret uint64) (arch.FuncReturn, error) {
	r := arch.FuncReturn{Ret: ret}
	pop, nops := ret, 0
	for {
		p, ok := prevStart(w, pop)
		if !ok {
			return r, shapeErr(ret, "a return without POPQ BP before it: a frameless function")
		}
		if b := m.Read(p, 1); len(b) == 1 && b[0] == 0x5D {
			pop = p
			break
		}
		in, err := decodeAt(m, p)
		if err != nil || !in.isNOP() || p+uint64(in.n) != pop || nops == 3 {
			if nops == 0 {
				return r, shapeErr(ret, "a return without POPQ BP before it: a frameless function")
			}
			return r, shapeErr(ret, "a return after %d NOPs without POPQ BP before them: a frameless function", nops)
		}
		pop, nops = p, nops+1
	}
	var b []byte
	switch {
	case w.IsStart(pop-7) && bytes.HasPrefix(m.Read(pop-7, 3), []byte{0x48, 0x81, 0xC4}):
		r.Addr = pop - 7
		b = m.Read(r.Addr, 7)
		r.Frame = int64(int32(binary.LittleEndian.Uint32(b[3:])))
	case w.IsStart(pop-4) && bytes.HasPrefix(m.Read(pop-4, 3), []byte{0x48, 0x83, 0xC4}):
		r.Addr = pop - 4
		b = m.Read(r.Addr, 5) // with POPQ, whose byte the call keeps
		r.Frame = int64(int8(b[3]))
		r.Pad = true
	case w.IsStart(pop-4) && bytes.Equal(m.Read(pop-4, 4), []byte{0x48, 0x83, 0xEC, 0x80}):
		// SUBQ $-128, SP: ADDQ $128, SP in the 4 bytes of an imm8 (asm6.go swaps
		// ADDQ $128 for it). The call covers it and the POPQ, as with ADDQ $imm8.
		r.Addr = pop - 4
		b = m.Read(r.Addr, 5)
		r.Frame = 128
		r.Pad = true
	default:
		return r, shapeErr(pop, "POPQ BP; RET without ADDQ $N, SP before: a frame of only the saved BP, too short an epilogue for the call")
	}
	if r.Frame <= 0 {
		return r, shapeErr(r.Addr, "ADDQ $%d, SP: not a frame's release", r.Frame)
	}
	if t, ok := w.Target(r.Addr+1, ret+1); ok {
		return r, shapeErr(t, "a branch lands inside the epilogue at %#x: a return the call would not see", r.Addr)
	}
	r.Orig = b
	return r, nil
}

// prevStart is the start of the instruction before the one at pc in w.
func prevStart(w *arch.Walked, pc uint64) (uint64, bool) {
	for n := uint64(1); n <= maxInstLen && pc-n >= w.Entry; n++ {
		if w.IsStart(pc - n) {
			return pc - n, true
		}
	}
	return 0, false
}

// CallTo encodes a CALL at pc to target followed by NOPs to n bytes; nil when the
// target is out of a CALL's reach or n is too short.
func CallTo(pc, target uint64, n int) []byte {
	rel := int64(target) - int64(pc+5)
	if n < 5 || rel != int64(int32(rel)) {
		return nil
	}
	b := binary.LittleEndian.AppendUint32([]byte{0xE8}, uint32(int32(rel)))
	return append(b, nop(n-5)...)
}
