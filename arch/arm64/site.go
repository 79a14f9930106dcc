package arm64

import (
	"encoding/binary"

	"golang.org/x/arch/arm64/arm64asm"
)

// A probe site, as go1.26 compiles `if p.on != 0 { p.fire(a) }` inlined into user
// code with p a package-level variable:
//
//	ADRP X27, X@PAGE          flag load (X27 is REGTMP, the assembler's scratch)
//	LDRB Wn, [X27, #X@PAGEOFF]
//	...                       unrelated work the scheduler moved in between
//	NOP                       inline mark (optional)
//	CBZ  Wn, skip             the site; or CBNZ Wn, fire; or TBZ/TBNZ Wn, #0
//	fire block: spills; ADRP X0 + ADD X0, X0, #X@PAGEOFF; BL (*P).fire; reloads; to skip
//
// Only the branch is the site (4 bytes): the load may be several instructions before
// it. When Wn is proven dead after the branch, the load is turned into NOPs too.

// Load is a candidate flag load: ADRP Xt then LDRB Wn, [Xt, #lo12], or ADRP Xt, ADD Xt,
// Xt, #lo12, LDRB Wn, [Xt, #k].
type Load struct {
	Addr uint64 // the ADRP
	Len  int    // 8 or 12 bytes
	Flag uint64 // the byte loaded
	Reg  int    // n of Wn
	Tmp  int    // t of Xt, the ADRP's destination
}

// End is the address after the load's LDRB.
func (l Load) End() uint64 { return l.Addr + uint64(l.Len) }

// Candidates returns every flag-load pair in text, which starts at virtual address base
// (4-byte aligned): a cheap pre-filter on raw encodings, not a match.
func Candidates(text []byte, base uint64) []Load {
	var out []Load
	word := func(off int) uint32 { return binary.LittleEndian.Uint32(text[off:]) }
	for off := int((-base) % InstLen); off+8 <= len(text); off += InstLen {
		pc := base + uint64(off)
		page, t, ok := adrp(word(off), pc)
		if !ok || t == 31 {
			continue
		}
		w := word(off + 4)
		if rt, rn, imm, ok := ldrbImm(w); ok && rn == t && rt != 31 {
			out = append(out, Load{Addr: pc, Len: 8, Flag: page + imm, Reg: rt, Tmp: t})
			continue
		}
		if rd, rn, lo, ok := addImm(w); ok && rd == t && rn == t && off+12 <= len(text) {
			if rt, rn, imm, ok := ldrbImm(word(off + 8)); ok && rn == t && rt != 31 {
				out = append(out, Load{Addr: pc, Len: 12, Flag: page + lo + imm, Reg: rt, Tmp: t})
			}
		}
	}
	return out
}

// Site is a matched probe site.
type Site struct {
	Load
	Addr    uint64      // the conditional branch: the only instruction of the site
	Word    uint32      // its encoding
	Op      arm64asm.Op // CBZ, CBNZ, TBZ or TBNZ
	Taken   uint64      // its target
	Between int         // instructions between the load and the branch
}

// Next is the fall-through after the branch.
func (s Site) Next() uint64 { return s.Addr + InstLen }

// branchesOnZero reports whether the branch is taken when the flag is clear.
func (s Site) branchesOnZero() bool { return s.Op == arm64asm.CBZ || s.Op == arm64asm.TBZ }

// Fire is where control goes when the flag is set.
func (s Site) Fire() uint64 {
	if s.branchesOnZero() {
		return s.Next()
	}
	return s.Taken
}

// Skip is where control goes when the flag is clear.
func (s Site) Skip() uint64 {
	if s.branchesOnZero() {
		return s.Taken
	}
	return s.Next()
}

// maxBetween bounds how far the scheduler may have moved the load from its branch.
const maxBetween = 16

// FollowLoad walks the straight-line code after the load to the instruction that uses
// Wn, which must be the site's branch: CBZ/CBNZ Wn (or Xn: LDRB zero-extends), or
// TBZ/TBNZ Wn, #0. Nothing in between may name Wn or transfer control. It decodes from
// the load, which may not be code at all: MatchSite proves that later.
func FollowLoad(m Memory, l Load) (Site, error) {
	pc := l.End()
	for n := 0; n <= maxBetween; n++ {
		in, err := Decode(m, pc)
		if err != nil {
			return Site{}, err
		}
		reads, writes, known := regEffect(in, l.Reg)
		switch {
		case isCondBranch(in) && reads:
			return branchSite(l, in, n)
		case !known || reads || writes:
			return Site{}, shapeErr(in.PC, "W%d loaded from %#x is used by %v, not a branch", l.Reg, l.Flag, in.Inst)
		case in.Op == arm64asm.BL || in.Op == arm64asm.BLR || isCondBranch(in) || isUncond(in):
			return Site{}, shapeErr(in.PC, "%v between the flag load and its test", in.Inst)
		}
		pc = in.End()
	}
	return Site{}, shapeErr(l.Addr, "no test of W%d within %d instructions of the load", l.Reg, maxBetween)
}

func branchSite(l Load, in Inst, between int) (Site, error) {
	s := Site{Load: l, Addr: in.PC, Word: in.Word, Op: in.Op, Taken: in.Target, Between: between}
	switch in.Op {
	case arm64asm.CBZ, arm64asm.CBNZ:
	case arm64asm.TBZ, arm64asm.TBNZ:
		if imm, ok := in.Inst.Args[1].(arm64asm.Imm); !ok || imm.Imm != 0 {
			return Site{}, shapeErr(in.PC, "%v tests a bit other than 0", in.Inst)
		}
	default:
		return Site{}, shapeErr(in.PC, "W%d is tested by %v, not CBZ/CBNZ/TBZ/TBNZ", l.Reg, in.Inst)
	}
	if regNum(in.Inst.Args[0]) != l.Reg || s.Taken == 0 {
		return Site{}, shapeErr(in.PC, "%v does not test W%d", in.Inst, l.Reg)
	}
	return s, nil
}

// MatchSite checks a followed site against its whole function, decoded from the entry
// (insts) with its branch targets (see BranchTargets): the load and the branch are
// decoded instructions of the function, nothing between them is bad data, and no branch
// lands after the ADRP up to and including the site's branch, so every path to the
// branch comes through the load. Errors are *ShapeError.
func MatchSite(insts []Inst, s Site, targets map[uint64]bool) error {
	i, ok := Index(insts, s.Load.Addr)
	if !ok {
		return shapeErr(s.Load.Addr, "flag load is not an instruction of the function")
	}
	j, ok := Index(insts, s.Addr)
	if !ok {
		return shapeErr(s.Addr, "branch is not an instruction of the function")
	}
	for _, in := range insts[i : j+1] {
		if in.Bad {
			return shapeErr(in.PC, "undecodable word %#08x in the site", in.Word)
		}
		if in.PC != s.Load.Addr && targets[in.PC] {
			return shapeErr(s.Addr, "a branch targets %#x between the flag load and the site", in.PC)
		}
	}
	if s.Taken > s.Load.Addr && s.Taken <= s.Addr {
		return shapeErr(s.Addr, "the branch targets %#x inside the site", s.Taken)
	}
	return nil
}
