package arm64

import (
	"encoding/binary"
	"strings"

	"github.com/gosdt/gosdt/arch"
)

// The shapes of a Go function's prologue, morestack block and epilogues on arm64
// (cmd/internal/obj/arm64/obj7.go), as the entry and return stubs of function probes
// take them (arch.FuncEntry, FuncReturn):
//
//	small frame:  MOVD 16(R28), R16          f9400b90
//	              CMP  R16, RSP              eb3063ff
//	              BLS  morestack
//	              MOVD.W R30, -N(RSP)        str x30, [sp, #-N]!
//	              MOVD R29, -8(RSP)          f81f83fd
//	              SUB  $8, RSP, R29          d10023fd      <- BL entry stub
//	large frame:  MOVD 16(R28), R16; SUB $X, RSP, R17; CMP R16, R17; BLS morestack
//	              SUB  $N, RSP, R20; STP (R29, R30), -8(R20); MOVD R20, RSP
//	              SUB  $8, RSP, R29                         <- BL entry stub
//
//	morestack:    STP/STR{,B,H,W} Rn, d(RSP) / FMOV{S,D} Fn, d(RSP) ...   the register arguments
//	              MOVD R30, R3; CALL runtime.morestack_noctxt (or runtime.morestack)
//	              LDP/LDR... d(RSP), ...; JMP entry
//
//	epilogue:     MOVD -8(RSP), R29          f85f83fd      <- BL return stub
//	              MOVD.P N(RSP), R30         ldr x30, [sp], #N
//	              RET
//	          or  LDP -8(RSP), (R29, R30)    a97ffbfd      <- BL return stub
//	              ADD $N, RSP, RSP
//	              RET
//	          or  LDP -8(RSP), (R29, R30)                  <- BL return stub   (4 KiB and more)
//	              MOVD $N, R27; ADD R27, RSP, RSP; RET
//
// Each call replaces one instruction, an aligned word: a goroutine parked at any
// instruction boundary resumes on a whole instruction. The entry's BL comes after the
// frame exists and the link register is saved (at 0(RSP)), so the unwinder reads the
// stub's caller as the function, at a pc where its frame is N bytes; BL is not among
// the instructions the ARM ARM lets one write while other cores may execute them, so
// these writes go through the stop-the-world rendezvous. The stack check stays the
// function's own: a check that fails grows the stack before the BL is reached.

const (
	loadGuard  = 0xf9400b90 // MOVD 16(R28), R16
	cmpGuardSP = 0xeb3063ff // CMP R16, RSP
	setFP      = 0xd10023fd // SUB $8, RSP, R29
	loadFP     = 0xf85f83fd // MOVD -8(RSP), R29 (LDUR X29, [SP, #-8])
	loadFPLR   = 0xa97ffbfd // LDP -8(RSP), (R29, R30)
	storeFP    = 0xf81f83fd // MOVD R29, -8(RSP)
	retLR      = 0xd65f03c0 // RET
)

// funcEntry reads the prologue of the function walked in w and its morestack block.
func funcEntry(m arch.Memory, w *arch.Walked, name func(pc uint64) string) (arch.FuncEntry, error) {
	e := arch.FuncEntry{}
	word := func(pc uint64) uint32 {
		if b := m.Read(pc, instLen); len(b) == instLen {
			return binary.LittleEndian.Uint32(b)
		}
		return 0
	}
	if word(w.Entry) != loadGuard {
		return e, shapeErr(w.Entry, "no stack check at entry (%#08x): a leaf, frameless or with a frame under 128 bytes (the compiler makes it nosplit), or a prologue of another shape: no saved link register for the BL to keep, no morestack block to read the arguments' spill slots from", word(w.Entry))
	}
	// The check's branches (a huge frame's also tests the subtraction's carry, to the
	// same block), then the frame's allocation, up to SUB $8, RSP, R29.
	pc := w.Entry + instLen
	for ; pc < w.Entry+8*instLen; pc += instLen {
		in, err := decode(m, pc)
		if err != nil {
			return e, err
		}
		if in.Flow != flowCond {
			continue
		}
		if e.Morestack != 0 && in.Target != e.Morestack {
			return e, shapeErr(pc, "the stack check branches to two places")
		}
		e.Morestack = in.Target
		if in.Word&0xFF00001F == 0x54000009 { // B.LS
			break
		}
		if in.Word&0xFF00001F != 0x54000003 { // B.CC
			return e, shapeErr(pc, "stack check branches with %s, not BLS", in)
		}
	}
	if e.Morestack < w.Entry || e.Morestack >= w.End {
		return e, shapeErr(w.Entry, "no BLS to a morestack block in the stack check")
	}
	var r27 int64 = -1 // MOVZ $imm, R27: a huge frame's size, for SUB R27, RSP, R20
	for pc += instLen; pc < w.Entry+16*instLen; pc += instLen {
		switch x := word(pc); {
		case x == setFP:
			e.Addr, e.Resume = pc, pc+instLen
		case x&0xFFE00FFF == 0xF8000FFE: // MOVD.W R30, -N(RSP): STR X30, [SP, #imm9]!
			e.Frame = -int64(int32(x<<11) >> 23)
		case x&0xFF8003FF == 0xD10003F4: // SUB $N, RSP, R20
			e.Frame = int64(x >> 10 & 0xFFF)
			if x&(1<<22) != 0 {
				e.Frame <<= 12
			}
		case x&0xFF80001F == 0xD280001B: // MOVZ $imm16<<hw, R27
			r27 = int64(x>>5&0xFFFF) << (16 * (x >> 21 & 3))
		case x == 0xCB3B63F4 && r27 > 0: // SUB R27, RSP, R20
			e.Frame = r27
		case x&0xFF80001F == 0xF280001B: // MOVK: a frame beyond what one MOVZ says
			return e, shapeErr(pc, "a frame too large to read")
		}
		if e.Addr != 0 {
			break
		}
	}
	if e.Addr == 0 || e.Frame <= 0 {
		return e, shapeErr(w.Entry, "no frame allocation ending in SUB $8, RSP, R29 after the stack check")
	}
	if word(e.Addr-instLen) != 0x9100029F && word(e.Addr-instLen) != storeFP { // MOVD R20, RSP; MOVD R29, -8(RSP)
		return e, shapeErr(e.Addr, "SUB $8, RSP, R29 not right after the frame's allocation")
	}
	if t, ok := w.Target(w.Entry+instLen, e.Resume); ok {
		return e, shapeErr(t, "a branch lands inside the prologue")
	}
	e.Orig = m.Read(e.Addr, instLen)
	if err := readMorestack(m, w, &e, name); err != nil {
		return e, err
	}
	return e, notLeaf(m, w, name)
}

// notLeaf refuses a leaf function: one that calls nothing but morestack. The
// compiler marks it LEAF (obj7.go) and, though its prologue saves R30, its epilogue
// returns through R30 itself, never reloaded (ADD $N-8, RSP, R29; ADD $N, RSP, RSP;
// RET): the entry's BL would overwrite its return address. A function that calls
// (BL, BLR, or the duff devices by BL) treats R30 as scratch after its prologue and
// reloads it from its frame in every epilogue.
func notLeaf(m arch.Memory, w *arch.Walked, name func(pc uint64) string) error {
	it, err := words(m, w, w.End)
	if err != nil {
		return err
	}
	for it.next() {
		switch x, pc := it.x, it.pc; {
		case x&0xFFFFFC1F == 0xD63F0000: // BLR Xn
			return nil
		case x>>26 == 0x25: // BL
			t := pc + uint64(int64(int32(x<<6)>>6)*4)
			if n := strings.TrimSuffix(name(t), ".abi0"); n != "runtime.morestack" && n != "runtime.morestack_noctxt" {
				return nil
			}
		}
	}
	return shapeErr(w.Entry, "a leaf function with a frame: it returns through the link register, which the entry's BL would overwrite")
}

// readMorestack reads the morestack block at e.Morestack: the spills, the call, the
// reloads that mirror them, and the jump back to the entry.
func readMorestack(m arch.Memory, w *arch.Walked, e *arch.FuncEntry, name func(pc uint64) string) error {
	var reloads []arch.Spill
	called := false
	for pc := e.Morestack; pc < e.Morestack+64*instLen; pc += instLen {
		in, err := decode(m, pc)
		if err != nil {
			return err
		}
		switch {
		case in.Word == 0xD503201F: // NOP
		case in.Word == 0xAA1E03E3 && !called: // MOVD R30, R3: morestack's argument
		case in.Flow == flowBL && !called:
			switch strings.TrimSuffix(name(in.Target), ".abi0") {
			case "runtime.morestack":
				e.Context = true
			case "runtime.morestack_noctxt":
			default:
				return shapeErr(pc, "the morestack block calls %s", name(in.Target))
			}
			called = true
		case in.Flow == flowB:
			if !called || in.Target != w.Entry {
				return shapeErr(pc, "the morestack block jumps to %#x, not back to the entry", in.Target)
			}
			if !arch.SameSpills(e.Spills, reloads) {
				return shapeErr(pc, "the morestack block reloads %v, not what it spilled (%v)", reloads, e.Spills)
			}
			return nil
		default:
			s, ok := spillsOf(in.Word, !called)
			if !ok {
				return shapeErr(pc, "not a spill or reload of argument registers in the morestack block: %s", in)
			}
			if called {
				reloads = append(reloads, s...)
			} else {
				e.Spills = append(e.Spills, s...)
			}
		}
	}
	return shapeErr(e.Morestack, "a morestack block longer than any the compiler writes")
}

// spillsOf reads a store (store) or load of argument registers at d(RSP): STR/LDR of
// a general or floating-point register with an unsigned offset, or a pair of 32- or
// 64-bit ones (STP/LDP with a signed offset: the assembler pairs adjacent spills).
func spillsOf(w uint32, store bool) ([]arch.Spill, bool) {
	if w>>5&31 != 31 { // the base is SP
		return nil, false
	}
	load := uint32(0)
	if !store {
		load = 1
	}
	reg := func(r uint32, fp bool) (uint8, bool) {
		switch {
		case fp && r < 16:
			return arch.FloatReg + uint8(r), true
		case !fp && r < 16:
			return uint8(r), true
		}
		return 0, false
	}
	mk := func(r uint32, fp bool, size uint8, off int64) ([]arch.Spill, bool) {
		x, ok := reg(r, fp)
		if !ok || off < 8 {
			return nil, false
		}
		return []arch.Spill{{Reg: x, Size: size, Off: int32(off - 8)}}, true
	}
	switch {
	case w&0x3B400000 == 0x39000000|load<<22, !store && w&0x3BC00000 == 0x39800000: // STR/LDR, LDRSx (immediate, unsigned offset)
		size := uint8(1) << (w >> 30)
		fp := w&(1<<26) != 0
		if w>>23&1 != 0 && (fp || store || w>>22&1 != 0) {
			// A 128-bit register, or not a load that sign-extends to 64 bits (LDRSB,
			// LDRSH, LDRSW: how the block reloads a narrow signed argument).
			return nil, false
		}
		return mk(w&31, fp, size, int64(w>>10&0xFFF)*int64(size))
	case w>>27&7 == 5 && w>>23&7 == 2 && w>>22&1 == load: // STP/LDP (signed offset)
		fp := w&(1<<26) != 0
		var size uint8
		switch opc := w >> 30; {
		case opc == 0: // Wt or St pairs
			size = 4
		case !fp && opc == 2, fp && opc == 1: // Xt or Dt pairs
			size = 8
		case !fp && opc == 1 && !store: // LDPSW: a pair of int32 reloaded sign-extended
			size = 4
		default: // Qt pairs
			return nil, false
		}
		off := int64(int32(w<<10)>>25) * int64(size)
		a, ok1 := mk(w&31, fp, size, off)
		b, ok2 := mk(w>>10&31, fp, size, off+int64(size))
		return append(a, b...), ok1 && ok2
	}
	return nil, false
}

// funcReturns finds every return of the function walked in w, each of which must be
// an epilogue of the shape the return stub takes.
func funcReturns(m arch.Memory, w *arch.Walked) ([]arch.FuncReturn, error) {
	var rets []arch.FuncReturn
	it, err := words(m, w, w.End)
	if err != nil {
		return nil, err
	}
	// Fixed-width code: what can leave the function is told by each word's encoding,
	// whatever else the decoder knows of it.
	for it.next() {
		switch x, pc := it.x, it.pc; {
		case x&0xFFFFFC1F == 0xD65F0000: // RET Xn
			r, err := epilogue(m, w, pc)
			if err != nil {
				return nil, err
			}
			rets = append(rets, r)
		case x&0xFE9FF000 == 0xD61F0800, x&0xFFFFFBFF == 0xD65F0BFF: // BRA*, RETA*: authenticated forms Go does not emit
			return nil, shapeErr(pc, "an authenticated branch or return (%#08x)", x)
		case x>>26 == 0x05: // B
			if t := pc + uint64(int64(int32(x<<6)>>6)*4); t < w.Entry || t >= w.End {
				return nil, shapeErr(pc, "a jump out of the function (to %#x): a return the probe would not see", t)
			}
		}
		// BR Xn stays: the compiler jumps through registers only for jump tables, whose
		// targets are the function's own blocks (tail calls are direct B).
	}
	if len(rets) == 0 {
		return nil, shapeErr(w.Entry, "no return: the function never returns")
	}
	return rets, nil
}

// epilogue reads the epilogue that ends at the RET at ret.
func epilogue(m arch.Memory, w *arch.Walked, ret uint64) (arch.FuncReturn, error) {
	r := arch.FuncReturn{Ret: ret, Addr: ret - 2*instLen}
	b := m.Read(r.Addr, 3*instLen)
	if len(b) != 3*instLen || binary.LittleEndian.Uint32(b[8:]) != retLR {
		return r, shapeErr(ret, "not a plain RET")
	}
	first, second := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	var huge []byte // a frame of 4 KiB and more: LDP; MOVD $N, R27; ADD R27, RSP, RSP; RET
	if first&0xFF80001F == 0xD280001B && second == 0x8B3B63FF && ret >= w.Entry+3*instLen {
		huge = m.Read(ret-3*instLen, instLen)
	}
	switch {
	case len(huge) == instLen && binary.LittleEndian.Uint32(huge) == loadFPLR:
		// The BL goes over the LDP as in the small form; the MOVD and the ADD stay,
		// for a goroutine parked on them. retTail pops the frame from a register
		// (any size); R27, the assembler's scratch, is dead after a return.
		r.Addr = ret - 3*instLen
		r.Frame = int64(first>>5&0xFFFF) << (16 * (first >> 21 & 3))
		r.Restores = "fp,lr"
		b = m.Read(r.Addr, 4*instLen)
	case first == loadFP && second&0xFFE00FFF == 0xF84007FE: // MOVD.P N(RSP), R30: LDR X30, [SP], #imm9
		r.Frame = int64(int32(second<<11) >> 23)
		r.Restores = "fp"
	case first == loadFPLR && second&0xFF8003FF == 0x910003FF: // ADD $N, RSP, RSP
		r.Frame = int64(second >> 10 & 0xFFF)
		if second&(1<<22) != 0 {
			r.Frame <<= 12
		}
		r.Restores = "fp,lr"
	default:
		if huge != nil {
			return r, shapeErr(ret, "a huge frame's release (MOVD $N, R27; ADD R27, RSP, RSP) without LDP -8(RSP), (R29, R30) before it")
		}
		return r, shapeErr(ret, "a return without its frame's release before it (%#08x %#08x): a frameless function, or an epilogue of another shape", first, second)
	}
	if r.Frame <= 0 {
		return r, shapeErr(r.Addr, "an epilogue that releases %d bytes", r.Frame)
	}
	if t, ok := w.Target(r.Addr+instLen, ret+instLen); ok {
		return r, shapeErr(t, "a branch lands inside the epilogue at %#x: a return the call would not see", r.Addr)
	}
	r.Orig = b[:instLen]
	return r, nil
}

// CallTo encodes a BL at pc to target; nil when target is out of its reach (128 MiB).
func CallTo(pc, target uint64) []byte {
	rel := int64(target) - int64(pc)
	if rel%4 != 0 || rel < -(1<<27) || rel >= 1<<27 {
		return nil
	}
	return binary.LittleEndian.AppendUint32(nil, 0x94000000|uint32(rel/4)&0x03FFFFFF)
}
