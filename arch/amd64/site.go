package amd64

import (
	"bytes"
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
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
// the fire block starts with more race calls (see guardedCall).

// cmpbOpcode is the encoding prefix of CMPB $imm8, disp32(RIP).
var cmpbOpcode = []byte{0x80, 0x3D}

// cmpbLen is the length of CMPB $0, rel32(RIP).
const cmpbLen = 7

// candidates returns the checks `80 3D <rel32> 00` (CMPB $0, rel32(RIP)) that start
// at offsets lo..hi-1 of text (Arch.Candidates).
func candidates(text []byte, base uint64, lo, hi int) []arch.Check {
	offs := candidatesIn(text, lo, hi)
	out := make([]arch.Check, len(offs))
	for i, off := range offs {
		addr := base + uint64(off)
		rel := int32(binary.LittleEndian.Uint32(text[off+2:]))
		out[i] = arch.Check{Addr: addr, Len: cmpbLen, Flag: addr + cmpbLen + uint64(int64(rel)), Reg: -1, Tmp: -1}
	}
	return out
}

// candidatesIn returns the offsets of every `80 3D xx xx xx xx 00` that starts at
// offsets lo..hi-1 of text. Candidates may overlap and need not start on instruction
// boundaries.
func candidatesIn(text []byte, lo, hi int) []int {
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

// maxPadding bounds the NOPs the assembler puts between the CMPB and its Jcc.
const maxPadding = 8

// follow reads the CMPB at c.Addr as a site's (Arch.Follow): NOPs, then the JE or JNE
// that tests the flag. On error the site is the CMPB alone.
func follow(m arch.Memory, c arch.Check) (arch.Site, error) {
	s := arch.Site{Check: c, Addr: c.Addr, Len: c.Len}
	pc := c.End()
	for range maxPadding {
		if p, ok := peek(m, pc); ok && p.kind != peekOther && p.kind != peekMove && p.kind != peekLeaRIP {
			if p.kind == peekNOP {
				pc += uint64(p.n)
				continue
			}
			s.Len, s.Taken, s.OnZero, s.Branch = int(pc+uint64(p.n)-c.Addr), p.target, p.kind == peekJE, "JNE"
			if s.OnZero {
				s.Branch = "JE"
			}
			return s, nil
		}
		in, err := decode(m, pc)
		if err != nil {
			return s, err
		}
		switch in.Op {
		case x86asm.NOP:
			pc = in.End()
			continue
		case x86asm.JE, x86asm.JNE:
			s.Len, s.Taken, s.OnZero, s.Branch = int(in.End()-c.Addr), in.Target, in.Op == x86asm.JE, in.Op.String()
			return s, nil
		}
		return s, shapeErr(in.PC, "%v after the compare, not a JE or JNE", in.Op)
	}
	return s, shapeErr(pc, "too much padding after the compare")
}

// maxSiteLen bounds a site: the CMPB, padding NOPs and the Jcc.
const maxSiteLen = 64

// match proves s against its walked function (Arch.Match): its instructions, decoded
// by x86asm, fall on the walk's boundaries and have the site's exact shape (matchSite),
// and no branch of the function lands inside it.
func match(m arch.Memory, w *arch.Walked, s arch.Site) error {
	if !w.IsStart(s.Addr) {
		return shapeErr(s.Addr, "not on an instruction boundary")
	}
	var buf [maxPadding + 2]xinst // the CMPB, the padding, the Jcc: on the stack
	insts := buf[:0]
	for pc := s.Addr; pc < w.End && pc < s.Addr+maxSiteLen && len(insts) < len(buf); {
		if !w.IsStart(pc) {
			return shapeErr(pc, "x86asm and the walk disagree on the instruction boundary at %#x", pc)
		}
		in, err := decode(m, pc)
		if err != nil {
			return err
		}
		insts = append(insts, in)
		if len(insts) > 1 && in.Op != x86asm.NOP {
			break
		}
		pc = in.End()
	}
	got, err := matchSite(insts)
	if err != nil {
		return err
	}
	if got.Len != s.Len || got.Taken != s.Taken || got.Check.Flag != s.Check.Flag {
		return shapeErr(s.Addr, "the site decodes to %d bytes to %#x, followed as %d to %#x", got.Len, got.Taken, s.Len, s.Taken)
	}
	if t, ok := w.Target(s.Addr+1, s.Next()); ok {
		return shapeErr(s.Addr, "a branch targets %#x inside the site", t)
	}
	return nil
}

// matchSite checks that insts, decoded from a site's start, are CMPB $0 on a
// RIP-relative byte, only NOPs, then a JE or JNE (rel8 or rel32) that does not
// branch into the site itself, and returns the site they make.
func matchSite(insts []xinst) (arch.Site, error) {
	if len(insts) == 0 {
		return arch.Site{}, shapeErr(0, "no instructions")
	}
	cmp := insts[0]
	if !isCMPBZeroRIP(cmp) {
		return arch.Site{}, shapeErr(cmp.PC, "not CMPB $0, rel32(RIP): %v", cmp.Inst)
	}
	j := 1
	for ; j < len(insts) && insts[j].Op == x86asm.NOP; j++ {
	}
	if j >= len(insts) {
		return arch.Site{}, shapeErr(cmp.PC, "function ends after the CMPB")
	}
	jcc := insts[j]
	if jcc.Op != x86asm.JE && jcc.Op != x86asm.JNE || jcc.Target == 0 {
		return arch.Site{}, shapeErr(jcc.PC, "CMPB followed by %v, not JE/JNE", jcc.Inst)
	}
	if jcc.Inst.Prefix[0] != 0 {
		return arch.Site{}, shapeErr(jcc.PC, "prefixed %v", jcc.Inst)
	}
	s := arch.Site{
		Check:  arch.Check{Addr: cmp.PC, Len: cmp.Len, Flag: cmp.Mem, Reg: -1, Tmp: -1},
		Addr:   cmp.PC,
		Len:    int(jcc.End() - cmp.PC),
		Taken:  jcc.Target,
		OnZero: jcc.Op == x86asm.JE,
		Branch: jcc.Op.String(),
	}
	if s.Taken > s.Addr && s.Taken < s.Next() {
		return arch.Site{}, shapeErr(s.Addr, "JE/JNE targets %#x inside the site", s.Taken)
	}
	return s, nil
}

// isCMPBZeroRIP reports whether in is exactly `80 3D <rel32> 00`.
func isCMPBZeroRIP(in xinst) bool {
	xi := in.Inst
	if in.Op != x86asm.CMP || in.Len != cmpbLen || xi.Prefix[0] != 0 || xi.Opcode>>24 != 0x80 || xi.MemBytes != 1 {
		return false
	}
	m, ok := xi.Args[0].(x86asm.Mem)
	if !ok || m.Base != x86asm.RIP || m.Index != 0 || m.Segment != 0 {
		return false
	}
	imm, ok := xi.Args[1].(x86asm.Imm)
	return ok && imm == 0
}
