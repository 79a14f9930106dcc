package arm64

import (
	"bytes"
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
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

// candidates returns every flag load that starts at offsets lo..hi-1 of text, whose
// first byte is at base (Arch.Candidates): ADRP Xt then LDRB Wn, [Xt, #lo12], or ADRP
// Xt, ADD Xt, Xt, #lo12, LDRB Wn, [Xt, #k], read from raw encodings. Both end with the
// LDRB, whose top byte is 0x39: the search finds those bytes (indexLoadAVX2, 32 at a
// time, where the host has AVX2; else bytes.IndexByte, vectorised too), and only the
// words before one are looked at.
func candidates(text []byte, base uint64, lo, hi int) []arch.Check {
	hi = min(hi, len(text)-7) // the flag load is two words at least
	if lo >= hi {
		return nil
	}
	out := make([]arch.Check, 0, (hi-lo)>>12+4) // half the density of bench (a flag load in 2 KiB of text)
	end := min(len(text), hi+11)                // past the top byte of the last LDRB a load in range has
	for i := lo + 7; i < end; i++ {
		found := false
		if hasAVX2 && i >= 8 {
			// The vector search: it needs the 8 bytes before i.
			if k := indexLoadAVX2(text[i-8 : end]); k >= 0 {
				i, found = i+k-8, true
			} else if n := -1 - k; n > 8 {
				i += n - 8 // it looked at everything before
				if i >= end {
					break
				}
			}
		}
		if !found {
			j := bytes.IndexByte(text[i:end], 0x39)
			if j < 0 {
				break
			}
			i += j
		}
		w := i - 3 // the LDRB's word, if it is one
		if (base+uint64(w))%instLen != 0 || text[i-1]&0xC0 != 0x40 {
			continue
		}
		out = flagLoad(text, base, w, lo, hi, out)
	}
	return out
}

// flagLoad appends to out the flag load that ends with the LDRB Wn, [Xt, #k] at
// text[w:], if there is one that starts at lo..hi-1: ADRP Xt right before it, or ADRP
// Xt, ADD Xt, Xt, #lo12 before it.
func flagLoad(text []byte, base uint64, w, lo, hi int, out []arch.Check) []arch.Check {
	word := func(off int) uint32 { return binary.LittleEndian.Uint32(text[off:]) }
	rt, rn, imm, ok := ldrbImm(word(w))
	if !ok || rt == 31 {
		return out
	}
	if off := w - 4; off >= lo && off < hi {
		if page, t, ok := adrp(word(off), base+uint64(off)); ok && t != 31 && t == rn {
			return append(out, arch.Check{Addr: base + uint64(off), Len: 8, Flag: page + imm, Reg: rt, Tmp: t})
		}
	}
	if off := w - 8; off >= lo && off < hi {
		page, t, ok := adrp(word(off), base+uint64(off))
		if rd, rn2, lo12, isAdd := addImm(word(off + 4)); ok && t != 31 && t == rn && isAdd && rd == t && rn2 == t {
			return append(out, arch.Check{Addr: base + uint64(off), Len: 12, Flag: page + lo12 + imm, Reg: rt, Tmp: t})
		}
	}
	return out
}

// maxBetween bounds how far the scheduler may have moved the load from its branch.
const maxBetween = 16

// follow walks the straight-line code after the load to the instruction that uses
// Wn, which must be the site's branch (Arch.Follow): CBZ/CBNZ Wn (or Xn: LDRB
// zero-extends), or TBZ/TBNZ Wn, #0. Nothing in between may name Wn or transfer
// control. On error there is no site (Addr 0).
func follow(m arch.Memory, c arch.Check) (arch.Site, error) {
	s, err := followLoad(m, c)
	if err != nil {
		return arch.Site{Check: c}, err
	}
	return s, nil
}

func followLoad(m arch.Memory, c arch.Check) (arch.Site, error) {
	pc := c.End()
	code := m.Read(pc, (maxBetween+1)*instLen) // one read: the words are decoded from it
	bit := uint32(1) << c.Reg
	for n := 0; n <= maxBetween; n, pc = n+1, pc+instLen {
		if len(code) < instLen {
			return arch.Site{}, shapeErr(pc, "no code mapped")
		}
		w := binary.LittleEndian.Uint32(code)
		code = code[instLen:]
		// Only the fields the walk needs, in registers; the inst is made again for a
		// message or the site.
		in := decodeWord(w, pc)
		known, flow, reads, writes := in.Known(), in.Flow, in.Reads&bit != 0, in.Writes&bit != 0
		switch {
		case !known:
			return arch.Site{}, shapeErr(pc, "cannot decode %#08x: not an instruction the decoder knows", w)
		case flow == flowCond && reads:
			return branchSite(c, decodeWord(w, pc))
		case reads || writes:
			return arch.Site{}, shapeErr(pc, "W%d loaded from %#x is used by %v, not a branch", c.Reg, c.Flag, decodeWord(w, pc))
		case flow != flowNext && flow != flowADR && flow != flowADRP:
			return arch.Site{}, shapeErr(pc, "%v between the flag load and its test", decodeWord(w, pc))
		}
	}
	return arch.Site{}, shapeErr(c.Addr, "no test of W%d within %d instructions of the load", c.Reg, maxBetween)
}

func branchSite(c arch.Check, in inst) (arch.Site, error) {
	// CBZ/CBNZ: sf 011010 op imm19 Rt; TBZ/TBNZ: b5 011011 op b40 imm14 Rt.
	w := in.Word
	var name string
	switch w & 0x7F000000 {
	case 0x34000000:
		name = "CBZ"
	case 0x35000000:
		name = "CBNZ"
	case 0x36000000:
		name = "TBZ"
	case 0x37000000:
		name = "TBNZ"
	default:
		return arch.Site{}, shapeErr(in.PC, "W%d is tested by %v, not CBZ/CBNZ/TBZ/TBNZ", c.Reg, in)
	}
	if name[0] == 'T' && (w>>31 != 0 || w>>19&31 != 0) {
		return arch.Site{}, shapeErr(in.PC, "%v tests a bit other than 0", in)
	}
	if int(w&31) != c.Reg || in.Target == 0 {
		return arch.Site{}, shapeErr(in.PC, "%v does not test W%d", in, c.Reg)
	}
	return arch.Site{Check: c, Addr: in.PC, Len: instLen, Taken: in.Target, Branch: name,
		OnZero: name == "CBZ" || name == "TBZ"}, nil
}

// match checks a followed site against its walked function (Arch.Match): the load
// and the branch are words of the function, and no branch lands after the load up to
// and including the branch, so every path to the branch comes through the load. That
// the decoder knows every word from the load to the branch, follow has proven: it
// decoded each, and the load's own words are the ADRP, ADD and LDRB it matched.
func match(_ arch.Memory, w *arch.Walked, s arch.Site) error {
	load := s.Check.Addr
	if !w.IsStart(load) {
		return shapeErr(load, "flag load is not an instruction of the function")
	}
	if !w.IsStart(s.Addr) || s.Addr < load {
		return shapeErr(s.Addr, "branch is not an instruction of the function")
	}
	// An ADR may take any byte's address: only an instruction's is a branch target.
	for lo := load + 1; lo <= s.Addr; {
		t, ok := w.Target(lo, s.Addr+1)
		if !ok {
			break
		}
		if t%instLen == 0 {
			return shapeErr(s.Addr, "a branch targets %#x between the flag load and the site", t)
		}
		lo = t + 1
	}
	if s.Taken > load && s.Taken <= s.Addr+instLen {
		// The next instruction is where the branch falls through: both ways lead to
		// the same place, nothing a sled could switch.
		return shapeErr(s.Addr, "the branch targets %#x, inside the site or the next instruction", s.Taken)
	}
	return nil
}
