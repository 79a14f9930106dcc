package amd64

import (
	"bytes"
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
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
		in, err := decodeAt(m, pc)
		if err != nil {
			return s, err
		}
		switch {
		case in.isNOP():
			pc += uint64(in.n)
			continue
		case in.isJcc(ccE), in.isJcc(ccNE):
			s.Len, s.Taken, s.OnZero, s.Branch = int(pc+uint64(in.n)-c.Addr), in.target(pc), in.isJcc(ccE), "JNE"
			if s.OnZero {
				s.Branch = "JE"
			}
			return s, nil
		}
		return s, shapeErr(pc, "%v after the compare, not a JE or JNE", in.text(m, pc))
	}
	return s, shapeErr(pc, "too much padding after the compare")
}

// match proves s against its walked function (Arch.Match): the site read again from
// its bytes (matchSite) is the one followed, and no branch of the function lands
// inside it.
func match(m arch.Memory, w *arch.Walked, s arch.Site) error {
	if !w.IsStart(s.Addr) {
		return shapeErr(s.Addr, "not on an instruction boundary")
	}
	got, err := matchSite(m, w, s.Addr)
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

// matchSite reads the site at addr, an instruction start of the walked function w,
// byte by byte: exactly `80 3D <rel32> 00` (CMPB $0, rel32(RIP)), then up to
// maxPadding NOPs, then a JE or JNE (74/75 rel8, 0F 84/85 rel32) without a prefix
// that does not branch into the site itself, every instruction on a boundary of the
// walk; and returns the site they make.
func matchSite(m arch.Memory, w *arch.Walked, addr uint64) (arch.Site, error) {
	b := m.Read(addr, cmpbLen)
	if len(b) < cmpbLen || b[0] != cmpbOpcode[0] || b[1] != cmpbOpcode[1] || b[6] != 0 {
		return arch.Site{}, shapeErr(addr, "not CMPB $0, rel32(RIP): % x", b)
	}
	flag := addr + cmpbLen + uint64(int64(int32(binary.LittleEndian.Uint32(b[2:]))))
	pc := addr + cmpbLen
	for range maxPadding + 1 {
		if pc >= w.End {
			return arch.Site{}, shapeErr(addr, "function ends after the CMPB")
		}
		if !w.IsStart(pc) {
			return arch.Site{}, shapeErr(pc, "the site and the walk disagree on the instruction boundary at %#x", pc)
		}
		in, err := decodeAt(m, pc)
		if err != nil {
			return arch.Site{}, err
		}
		if in.isNOP() {
			pc += uint64(in.n)
			continue
		}
		if !in.isJcc(ccE) && !in.isJcc(ccNE) {
			return arch.Site{}, shapeErr(pc, "CMPB followed by %v, not JE/JNE", in.text(m, pc))
		}
		if in.pfx != 0 || in.rex != 0 {
			return arch.Site{}, shapeErr(pc, "prefixed %v", in.text(m, pc))
		}
		s := arch.Site{
			Check:  arch.Check{Addr: addr, Len: cmpbLen, Flag: flag, Reg: -1, Tmp: -1},
			Addr:   addr,
			Len:    int(pc + uint64(in.n) - addr),
			Taken:  in.target(pc),
			OnZero: in.isJcc(ccE),
			Branch: "JNE",
		}
		if s.OnZero {
			s.Branch = "JE"
		}
		if s.Taken >= s.Addr && s.Taken <= s.Next() {
			// At the site's end, the branch goes where it falls through: no fire block
			// between, nothing a sled could switch.
			return arch.Site{}, shapeErr(s.Addr, "JE/JNE targets %#x, inside the site or at its end", s.Taken)
		}
		return s, nil
	}
	return arch.Site{}, shapeErr(addr, "more than %d NOPs after the CMPB", maxPadding)
}
