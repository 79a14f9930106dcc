package amd64

import (
	"bytes"

	"golang.org/x/arch/x86/x86asm"
)

// A probe site, as go1.26 compiles `if p.on != 0 { p.fire(a) }` inlined into
// user code with p a package-level variable:
//
//	90                     NOP, inline mark (optional, not part of the site)
//	80 3D <rel32> 00       CMPB $0, X(SB)   site start; X = pc+7+rel32 is the flag
//	[0F 1F 00 | 66 90 ..]  optional alignment NOPs (JCC erratum padding)
//	74 rel8 | 0F 84 rel32  JE skip, forward or backward (loops); or JNE fire
//	fire block: spills; LEAQ X(SB), AX; CALL (*P).fire; reloads; to skip
//
// Under -race the CMPB is preceded by LEAQ X(SB), AX; CALL runtime.raceread and
// the fire block starts with more race calls (see GuardedCall).

// cmpbOpcode is the encoding prefix of CMPB $imm8, disp32(RIP).
var cmpbOpcode = []byte{0x80, 0x3D}

// Candidates returns the offsets in text of every `80 3D xx xx xx xx 00`
// (CMPB $0, rel32(RIP)): a cheap pre-filter, not a match. Candidates may
// overlap and need not start on instruction boundaries.
func Candidates(text []byte) []int {
	return CandidatesIn(text, 0, len(text))
}

// CandidatesIn returns the Candidates that start at offsets lo..hi-1 of text, so that
// parts of a large text can be searched in parallel.
func CandidatesIn(text []byte, lo, hi int) []int {
	var offs []int
	// A candidate at p reads up to p+6: the search covers lo..hi-1 as starts.
	end := min(hi+6, len(text))
	off := lo
	for off < hi {
		// Where the vector search runs (amd64 hosts), it tests all three bytes of
		// 16 positions at once: about as fast as bytes.IndexByte, without stopping
		// at every 3D byte (one in 300 of Go's code).
		i := searchCMPB(text[off:end])
		if i < 0 {
			off += -1 - i
			break
		}
		offs = append(offs, off+i)
		off += i + 1
	}
	// The rest, byte by byte from the second byte: 3D is rarer than 80 in Go's code.
	for off++; off <= hi && off < end; {
		i := bytes.IndexByte(text[off:min(hi+1, end)], cmpbOpcode[1])
		if i < 0 {
			break
		}
		off += i
		if text[off-1] == cmpbOpcode[0] && off+5 < len(text) && text[off+5] == 0 {
			offs = append(offs, off-1)
		}
		off++
	}
	return offs
}

// Site is a matched probe site: the compiler's flag check.
type Site struct {
	Addr  uint64    // first byte (the CMPB)
	Len   int       // CMPB + padding NOPs + Jcc
	Flag  uint64    // absolute flag address X
	Op    x86asm.Op // JE or JNE
	Taken uint64    // the Jcc's target
	Next  uint64    // Addr+Len, the fall-through
}

// Fire is where control goes when the flag is set: Next for JE, Taken for JNE.
func (s Site) Fire() uint64 {
	if s.Op == x86asm.JNE {
		return s.Taken
	}
	return s.Next
}

// Skip is where control goes when the flag is clear: Taken for JE, Next for JNE.
func (s Site) Skip() uint64 {
	if s.Op == x86asm.JNE {
		return s.Next
	}
	return s.Taken
}

// isCMPBZeroRIP reports whether in is exactly `80 3D <rel32> 00`.
func isCMPBZeroRIP(in Inst) bool {
	xi := in.Inst
	if in.Op != x86asm.CMP || in.Len != 7 || xi.Prefix[0] != 0 || xi.Opcode>>24 != 0x80 || xi.MemBytes != 1 {
		return false
	}
	m, ok := xi.Args[0].(x86asm.Mem)
	if !ok || m.Base != x86asm.RIP || m.Index != 0 || m.Segment != 0 {
		return false
	}
	imm, ok := xi.Args[1].(x86asm.Imm)
	return ok && imm == 0
}

// MatchSite checks that insts[i] is CMPB $0 on a RIP-relative byte, followed
// only by NOPs and then a JE or JNE (rel8 or rel32), and that no branch in
// targets (see BranchTargets) lands in the site's interior
// (Addr+1 .. Addr+Len-1). Errors are *ShapeError.
func MatchSite(insts []Inst, i int, targets map[uint64]bool) (Site, error) {
	if i < 0 || i >= len(insts) {
		return Site{}, shapeErr(0, "instruction index out of range")
	}
	cmp := insts[i]
	if !isCMPBZeroRIP(cmp) {
		return Site{}, shapeErr(cmp.PC, "not CMPB $0, rel32(RIP): %v", cmp.Inst)
	}
	j := i + 1
	for ; j < len(insts) && insts[j].Op == x86asm.NOP; j++ {
	}
	if j >= len(insts) {
		return Site{}, shapeErr(cmp.PC, "function ends after the CMPB")
	}
	jcc := insts[j]
	if jcc.Op != x86asm.JE && jcc.Op != x86asm.JNE || jcc.Target == 0 {
		return Site{}, shapeErr(jcc.PC, "CMPB followed by %v, not JE/JNE", jcc.Inst)
	}
	if jcc.Inst.Prefix[0] != 0 {
		return Site{}, shapeErr(jcc.PC, "prefixed %v", jcc.Inst)
	}
	s := Site{
		Addr:  cmp.PC,
		Len:   int(jcc.End() - cmp.PC),
		Flag:  cmp.Mem,
		Op:    jcc.Op,
		Taken: jcc.Target,
		Next:  jcc.End(),
	}
	for pc := s.Addr + 1; pc < s.Next; pc++ {
		if targets[pc] {
			return Site{}, shapeErr(s.Addr, "a branch targets %#x inside the site", pc)
		}
	}
	if s.Taken > s.Addr && s.Taken < s.Next {
		return Site{}, shapeErr(s.Addr, "JE/JNE targets %#x inside the site", s.Taken)
	}
	return s, nil
}
