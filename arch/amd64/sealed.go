package amd64

import (
	"bytes"

	"github.com/gosdt/gosdt/arch"
)

// maxSiteLen bounds a site: the CMPB, the assembler's padding and a JE rel32 (the site
// table's own bound).
const maxSiteLen = 64

// sealed reads the code at addr as a JE site sealed in the file in its disabled form
// (Arch.Sealed): the canonical sled for a site at addr, its JMP to the JMP's own
// target, then NOPs that end on an instruction start, is in the file byte for byte.
func sealed(m arch.Memory, w *arch.Walked, addr uint64) (arch.Site, arch.Sled, bool) {
	pc := addr
	if !jumps(m.Read(addr, 1)) || !w.IsStart(addr) {
		return arch.Site{}, arch.Sled{}, false
	}
	in, err := decodeAt(m, pc)
	if err != nil || in.flow != flowJmp {
		return arch.Site{}, arch.Sled{}, false
	}
	taken := in.target(pc)
	// The sled ends after its JMP or one of the NOPs that follow it: the longest that
	// is canonical is the site (a tail longer than 9 bytes is 9-byte NOPs after the
	// first, so a shorter reading could leave some of the site's NOPs out).
	end := pc + uint64(in.n)
	for end < w.End && end-addr < maxSiteLen {
		nop, err := decodeAt(m, end)
		if err != nil || !nop.isNOP() {
			break
		}
		end += uint64(nop.n)
	}
	for n := int(min(end-addr, maxSiteLen)); n >= minSiteLen; n-- {
		if next := addr + uint64(n); next >= w.End || !w.IsStart(next) || next == taken {
			// next == taken: a jump to the sled's own end, an out-of-line site's
			// disabled form, skips no fire block.
			continue
		}
		s := arch.Site{Check: arch.Check{Addr: addr, Reg: -1, Tmp: -1}, Addr: addr, Len: n, Taken: taken, OnZero: true, Branch: "JE"}
		sl, err := canonical(s)
		if err != nil || !bytes.Equal(m.Read(addr, n), sl.Off) {
			continue
		}
		if _, ok := w.Target(addr+1, s.Next()+1); ok {
			break
		}
		return s, sl, true
	}
	return arch.Site{}, arch.Sled{}, false
}

// rejoins follows the straight-line code from pc to to (Arch.Rejoins).
func rejoins(m arch.Memory, pc, to uint64, pass func(target uint64) bool) bool {
	jumps := 0
	for range guardedMaxInsts {
		if pc == to {
			return true
		}
		in, err := decodeAt(m, pc)
		if err != nil {
			return false
		}
		switch in.flow {
		case flowNext:
		case flowJmp:
			if jumps++; jumps > maxJumps {
				return false
			}
			pc = in.target(pc)
			continue
		case flowCall:
			if pass == nil || !pass(in.target(pc)) {
				return false
			}
		default:
			return false
		}
		pc += uint64(in.n)
	}
	return false
}
