package arm64

import (
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
)

// leafEntry reads the first instruction of a function without a stack check, for a B
// to a per-site slot that runs it out of line (fprobe's DESIGN.md, "Leaves"). The
// word must do the same at the slot's pc as at the entry (an ADRP re-encoded there), with every register but
// R16 and R17 as the function received them, and must not fault there (a fault would
// name the slot, not the function): so data processing that reads no flags and
// writes no SP, scalar floating point, and loads and stores based on SP (a frameless
// leaf's stack is its caller's, mapped) without writeback. No branch of the function
// may come back to the entry: the probe would fire on each pass.
//
// A first instruction that may fault, a load or store through a register other than
// SP, runs in place instead, and the jump is written over the next (up to
// maxInPlace of them, arch.LeafEntry.Before): it faults at the function's own pc,
// and what it loads is live at the slot, where the stub keeps it as it keeps the
// arguments, provided it loads into a register the stub saves (R0..R15, R26). No
// branch may target the entry or any instruction up to the jump: the probe would fire
// on each pass, or be passed by.
func leafEntry(m arch.Memory, w *arch.Walked) (arch.LeafEntry, error) {
	e := arch.LeafEntry{Addr: w.Entry, Resume: w.Entry + instLen}
	in, err := decode(m, w.Entry)
	if err != nil {
		return e, err
	}
	if in.Word == loadGuard {
		return e, shapeErr(w.Entry, "a stack check at entry: not a leaf")
	}
	if t, ok := w.Target(w.Entry, w.Entry+1); ok {
		return e, shapeErr(t, "a branch of the function targets its entry: the probe would fire on each pass")
	}
	var unread uint32 // R27 if the function never reads it, once a load in place needs it
	for n := 0; displaceable(in) != "" && inPlace(in); n++ {
		if n == 0 {
			unread = unreadRegs(m, w) & (1 << 27)
		}
		switch next := in.End(); {
		case n == maxInPlace:
			return e, shapeErr(w.Entry, "leaf's first %d instructions are loads or stores that may fault: no instruction within them to take the jump", n+1)
		case in.Writes&^inPlaceRegs&^unread != 0:
			// A nil check's load into R27 (the assembler's scratch, which no caller
			// expects kept) need not be kept when the leaf never reads it.
			return e, shapeErr(in.PC, "leaf's instruction %s runs in place before the probe and writes a register the leaf stub does not keep, which the leaf reads", in)
		case next >= w.End:
			return e, shapeErr(in.PC, "leaf's code ends after %d loads or stores that may fault", n+1)
		default:
			if t, ok := w.Target(next, next+1); ok {
				return e, shapeErr(t, "a branch of the function targets %#x, after loads that run in place: the probe would be passed by", next)
			}
			e.Before |= in.Writes & inPlaceRegs
			if in, err = decode(m, next); err != nil {
				return e, err
			}
			e.Addr, e.Resume = next, next+instLen
		}
	}
	if in.Flow == flowADRP {
		// Its page relative to its own: the slot re-encodes it (arch.LeafEntry.Rel).
		e.Rel, e.Target = 1, in.Target
	} else if why := displaceable(in); why != "" {
		what := "first instruction"
		if e.Addr != w.Entry {
			what = "instruction after the loads that run in place,"
		}
		return e, shapeErr(e.Addr, "leaf's %s %s: it cannot run out of line in a slot (%s)", what, why, in)
	}
	e.Orig = m.Read(e.Addr, instLen)
	e.ArgReads = argReads(m, w)
	e.LiveIn, e.LiveInKnown = liveIn(m, w)
	e.LiveIn |= e.Before
	return e, nil
}

// unreadRegs are the general-purpose registers no instruction of the function w
// reads (R0..R30); none when one cannot be decoded.
func unreadRegs(m arch.Memory, w *arch.Walked) uint32 {
	it, err := words(m, w, w.End)
	if err != nil {
		return 0
	}
	read := uint32(0)
	for it.next() {
		in := decodeWord(it.x, it.pc)
		if !in.Known() {
			return 0
		}
		read |= in.Reads
	}
	return ^read & (1<<31 - 1)
}

// maxInPlace is how many loads or stores that may fault a leaf's probe may come after.
const maxInPlace = 4

// inPlaceRegs are the registers an instruction that runs in place before a leaf's
// probe may write: those the leaf stub saves and restores (R0..R15, R26). Not R16,
// R17, R19, R20: the slot and the stub use them, dead at a function's entry only.
const inPlaceRegs = 1<<16 - 1 | 1<<26

// inPlace reports whether in is a load or store of general-purpose registers through
// a base other than SP, with an immediate offset and no writeback: what may fault at
// a leaf's entry and so runs there, in place, before its probe (leafEntry). Loads and
// stores of SIMD&FP registers are not: the decoder's write sets do not name them.
func inPlace(in inst) bool {
	w := in.Word
	if w&(1<<26) != 0 || w>>5&31 == 31 || in.Flow != flowNext {
		return false
	}
	return w&0x3B000000 == 0x39000000 || // LDR/STR (unsigned immediate)
		w&0x3B200C00 == 0x38000000 || // LDUR/STUR (unscaled immediate)
		w&0x3B800000 == 0x29000000 // LDP/STP (signed offset)
}

// liveIn says which registers the function w may read before writing them: those
// read in its straight-line start before it writes them, and those read anywhere
// after that start that the start did not write (a path-insensitive bound, sound:
// the start runs on every path, and nothing jumps into it). ok is false when an
// instruction cannot be decoded.
func liveIn(m arch.Memory, w *arch.Walked) (live uint32, ok bool) {
	var written uint32
	start := true
	it, err := words(m, w, w.End)
	if err != nil {
		return 0, false
	}
	for it.next() {
		pc, in := it.pc, decodeWord(it.x, it.pc)
		if !in.Known() {
			return 0, false
		}
		if start && pc != w.Entry {
			if _, hit := w.Target(pc, pc+1); hit {
				start = false
			}
		}
		live |= in.Reads &^ written
		if start {
			written |= in.Writes
			if in.Flow != flowNext {
				start = false
			}
		}
	}
	return live, true
}

// argReads says which words of its argument area (from 8(RSP)) the frameless function
// w reads: those its RSP-based loads and stores with an immediate offset name; all
// when RSP is used otherwise (copied, written back, an address taken) or an
// instruction cannot be read.
func argReads(m arch.Memory, w *arch.Walked) uint64 {
	const all = ^uint64(0)
	var r uint64
	mark := func(off, size uint64) bool {
		if off < 8 {
			return false
		}
		for k := (off - 8) / 8; k <= (off-8+size-1)/8; k++ {
			if k >= 64 {
				return false
			}
			r |= 1 << k
		}
		return true
	}
	it, err := words(m, w, w.End)
	if err != nil {
		return all
	}
	for it.next() {
		x := it.x
		rn := x >> 5 & 31
		switch {
		case x&0x0A000000 == 0x08000000: // loads and stores
			if rn != 31 {
				continue
			}
			size := uint64(1) << (x >> 30)
			if x&(1<<26) != 0 && x&0x3B000000 != 0x29000000 && x>>23&1 != 0 && x>>30 == 0 {
				size = 16 // a Q register
			}
			var ok bool
			switch {
			case x&0x3B000000 == 0x39000000: // unsigned immediate, scaled
				ok = mark(uint64(x>>10&0xFFF)*size, size)
			case x&0x3B200C00 == 0x38000000: // unscaled immediate
				if off := int64(int32(x<<11) >> 23); off >= 0 {
					ok = mark(uint64(off), size)
				}
			case x&0x3B800000 == 0x29000000: // pair, signed offset
				psize := uint64(4) << (x >> 31) // W or X
				if x&(1<<26) != 0 {
					psize = uint64(4) << (x >> 30)
				}
				if off := int64(int32(x<<10)>>25) * int64(psize); off >= 0 {
					ok = mark(uint64(off), 2*psize)
				}
			}
			if !ok {
				return all
			}
		case x&0x1F000000 == 0x11000000, // ADD/SUB immediate: RSP as Rn
			x&0x1F200000 == 0x0B200000: // ADD/SUB extended register: RSP as Rn
			if rn == 31 {
				return all
			}
		}
	}
	return r
}

// displaceable says why the instruction in may not run at another pc with R16 and R17
// and the flags changed, or "" if it may.
func displaceable(in inst) string {
	w := in.Word
	switch in.Flow {
	case flowNext:
	case flowADR:
		return "reads its own pc (ADR, not relocated)"
	default:
		return "passes control (not relocated)"
	}
	if in.Reads&(1<<16|1<<17) != 0 {
		return "reads the slot's scratch registers, R16 or R17"
	}
	rd, rn := w&31, w>>5&31
	switch {
	case w == 0xD503201F: // NOP
		return ""
	case w&0x1F800000 == 0x11000000: // ADD/ADDS/SUB/SUBS (immediate)
		if rd == 31 && w&(1<<29) == 0 {
			return "writes SP"
		}
		return ""
	case w&0x1F800000 == 0x12000000: // AND/ORR/EOR/ANDS (immediate)
		if rd == 31 && w>>29&3 != 3 {
			return "writes SP"
		}
		return ""
	case w&0x1F800000 == 0x12800000, // MOVN/MOVZ/MOVK
		w&0x1F800000 == 0x13000000, // SBFM/BFM/UBFM
		w&0x1F800000 == 0x13800000: // EXTR
		return ""
	case w&0x1F000000 == 0x0A000000: // logical (shifted register)
		return ""
	case w&0x1F200000 == 0x0B000000: // ADD/SUB (shifted register)
		return ""
	case w&0x1F200000 == 0x0B200000: // ADD/SUB (extended register): Rd 31 is SP unless it sets flags
		if rd == 31 && w&(1<<29) == 0 {
			return "writes SP"
		}
		return ""
	case w&0x1FE00000 == 0x1AC00000, // data processing, 1 and 2 sources (CLZ, REV, UDIV, LSLV...)
		w&0x1F000000 == 0x1B000000: // 3 sources (MADD, MSUB, SMULH, UMULH...)
		return ""
	case w&0x1FE00000 == 0x1A000000, w&0x1FE00000 == 0x1A400000, w&0x1FE00000 == 0x1A800000:
		return "reads the flags" // ADC/SBC, CCMP/CCMN, CSEL/CSINC/CSINV/CSNEG
	case w&0xDF200000 == 0x1E200000: // scalar floating point and conversions
		if k := w >> 10 & 3; k == 1 || k == 3 {
			return "reads the flags" // FCCMP, FCSEL
		}
		return ""
	case w&0x3B000000 == 0x18000000: // LDR (literal), also SIMD&FP, PRFM
		return "reads its own pc (LDR literal, not relocated)"
	case w&0x3B000000 == 0x39000000, // LDR/STR (unsigned immediate), also SIMD&FP
		w&0x3B200C00 == 0x38000000, // LDUR/STUR (unscaled immediate)
		w&0x3B800000 == 0x29000000: // LDP/STP (signed offset)
		if rn != 31 {
			return "may fault (its base is not SP)"
		}
		return ""
	}
	return "is not a form the slot runs"
}

// retJump reads the returns of the walked function for a B to a per-site slot written
// over each RET (fprobe's DESIGN.md, "Returns by a jump"): one word, so a goroutine
// parked on it resumes on the whole B, and at a RET the function's SP and R30 are as
// at its entry (the caller checks, by the pcsp table, that its frame is gone there).
// code is where its pc tables end. No jump may leave the function (a return the probe
// would not see), and every return must be a plain RET through R30.
func retJump(m arch.Memory, w *arch.Walked, code uint64) ([]arch.FuncReturn, error) {
	if code <= w.Entry || code > w.End || (code-w.Entry)%instLen != 0 {
		return nil, shapeErr(w.Entry, "the function's code ends at %#x, outside its range", code)
	}
	it, err := words(m, w, code)
	if err != nil {
		return nil, err
	}
	var rets []arch.FuncReturn
	for it.next() {
		switch x, pc := it.x, it.pc; {
		case x == retLR:
			rets = append(rets, arch.FuncReturn{Addr: pc, Ret: pc, Orig: binary.LittleEndian.AppendUint32(nil, x)})
		case x&0xFFFFFC1F == 0xD65F0000:
			return nil, shapeErr(pc, "a return through another register than R30 (%#08x)", x)
		case x&0xFE9FF000 == 0xD61F0800, x&0xFFFFFBFF == 0xD65F0BFF: // BRA*, RETA*: authenticated forms Go does not emit
			return nil, shapeErr(pc, "an authenticated branch or return (%#08x)", x)
		case x>>26 == 0x05: // B
			if t := pc + uint64(int64(int32(x<<6)>>6)*4); t < w.Entry || t >= code {
				return nil, shapeErr(pc, "a jump out of the function's code (to %#x): a return the probe would not see", t)
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
