package arm64

import (
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
)

// sealed reads the B at pc as the toggle of a CBZ or TBZ site sealed in the file in
// its disabled form (Arch.Sealed): the sled is the branch alone. The flag load before
// it may have become NOPs too; that rewrite is never toggled, so it need not be found.
func sealed(m arch.Memory, w *arch.Walked, pc uint64) (arch.Site, arch.Sled, bool) {
	b := m.Read(pc, instLen)
	if !jumps(b) || !w.IsStart(pc) || pc+instLen > w.End {
		return arch.Site{}, arch.Sled{}, false
	}
	kind, taken := raw(binary.LittleEndian.Uint32(b), pc)
	if kind != rawB {
		return arch.Site{}, arch.Sled{}, false
	}
	s := arch.Site{Check: arch.Check{Addr: pc, Reg: -1, Tmp: -1}, Addr: pc, Len: instLen, Taken: taken, OnZero: true, Branch: "CBZ"}
	sl, err := canonical(s)
	if err != nil || string(sl.Off) != string(b) {
		return arch.Site{}, arch.Sled{}, false
	}
	if _, ok := w.Target(pc+1, pc+instLen+1); ok {
		return arch.Site{}, arch.Sled{}, false
	}
	return s, sl, true
}

// rejoins follows the straight-line code from pc to to (Arch.Rejoins).
func rejoins(m arch.Memory, pc, to uint64, pass func(target uint64) bool) bool {
	jumps := 0
	for range guardedMaxInsts {
		if pc == to {
			return true
		}
		in, err := decode(m, pc)
		if err != nil {
			return false
		}
		switch in.Flow {
		case flowNext, flowADR, flowADRP:
		case flowB:
			if jumps++; jumps > maxJumps {
				return false
			}
			pc = in.Target
			continue
		case flowBL:
			if pass == nil || !pass(in.Target) {
				return false
			}
		default:
			return false
		}
		pc += instLen
	}
	return false
}
