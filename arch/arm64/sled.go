package arm64

import (
	"encoding/binary"
	"fmt"

	"github.com/gosdt/gosdt/arch"
)

// The canonical sled replaces the site's conditional branch (4 bytes) in place:
//
//	CBZ Wn, skip  / TBZ Wn, #0, skip   disabled: B skip   enabled: NOP
//	CBNZ Wn, fire / TBNZ Wn, #0, fire  disabled: NOP      enabled: B fire
//
// B and NOP are both on the ARM ARM's list of instructions that may be modified while
// another core executes them (B2.2.5, "concurrent modification and execution of
// instructions"), so after the one-time conversion a toggle is one aligned 32-bit store
// followed by cache maintenance. The conditional branch itself is not on that list: the
// conversion goes through the rendezvous.

// nopWord is the A64 NOP (HINT #0).
const nopWord uint32 = 0xD503201F

// Range of B's signed, word-scaled 26-bit offset: ±128 MiB.
const (
	minB = -(1 << 27)
	maxB = 1<<27 - 4
)

// encodeB returns B to at from: both 4-byte aligned, to - from within [minB, maxB].
func encodeB(from, to uint64) ([]byte, error) {
	w, err := bWord(from, to)
	if err != nil {
		return nil, err
	}
	return binary.LittleEndian.AppendUint32(nil, w), nil
}

// bWord is encodeB's word.
func bWord(from, to uint64) (uint32, error) {
	off := int64(to - from)
	if from%instLen != 0 || to%instLen != 0 {
		return 0, shapeErr(from, "B to %#x: unaligned", to)
	}
	if off < minB || off > maxB {
		return 0, shapeErr(from, "B to %#x: offset %d out of the ±128MiB range", to, off)
	}
	return 0x14000000 | uint32(off>>2)&0x03FFFFFF, nil
}

// jumps reports whether a toggle is the B form (Arch.Jumps).
func jumps(toggle []byte) bool {
	return len(toggle) == instLen && binary.LittleEndian.Uint32(toggle)&0xFC000000 == 0x14000000
}

// seal returns the canonical sled for s (Arch.Seal), with the flag load turned into
// NOPs once loadDead proves that nothing reads the flag's register after the branch;
// otherwise the load stays and the sled's Note says why.
func seal(m arch.Memory, s arch.Site, call func(target uint64) arch.CallEffect) (arch.Sled, error) {
	sl, mem, err := canonicalIn(s)
	if err != nil {
		return sl, err
	}
	if err := loadDead(m, s, call); err != nil {
		sl.Note = fmt.Sprintf("flag load at %#x kept (only the branch is patched): %v", s.Check.Addr, err)
		return sl, nil
	}
	nops := mem.bytes[2*instLen : 2*instLen+s.Check.Len : 2*instLen+s.Check.Len]
	for i := 0; i < len(nops); i += instLen {
		binary.LittleEndian.PutUint32(nops[i:], nopWord)
	}
	mem.also[0] = arch.Patch{Addr: s.Check.Addr, New: nops}
	sl.Also = mem.also[:]
	return sl, nil
}

// sledMem is a sled's bytes and its rewrite of the flag load, in one allocation.
type sledMem struct {
	bytes [2*instLen + 12]byte // the B and NOP forms, then the load's NOPs (8 or 12 bytes)
	also  [1]arch.Patch
}

// canonical returns the canonical sled for s: the B form goes where the branch was
// taken; for CBZ/TBZ (taken when clear) it is the disabled form, for CBNZ/TBNZ the
// enabled one.
func canonical(s arch.Site) (arch.Sled, error) {
	sl, _, err := canonicalIn(s)
	return sl, err
}

// canonicalIn is canonical, and the memory its forms are in.
func canonicalIn(s arch.Site) (arch.Sled, *sledMem, error) {
	switch s.Branch {
	case "CBZ", "CBNZ", "TBZ", "TBNZ":
	default:
		return arch.Sled{}, nil, shapeErr(s.Addr, "site branch is %q, not CBZ/CBNZ/TBZ/TBNZ", s.Branch)
	}
	if s.Check.Len > 12 {
		return arch.Sled{}, nil, shapeErr(s.Check.Addr, "flag load of %d bytes, more than 12", s.Check.Len)
	}
	if s.Taken == s.Addr || s.Taken == s.Addr+instLen {
		// A branch to itself, or to where it falls through: no two ways to switch.
		return arch.Sled{}, nil, shapeErr(s.Addr, "the branch targets %#x: itself or the next instruction", s.Taken)
	}
	w, err := bWord(s.Addr, s.Taken)
	if err != nil {
		return arch.Sled{}, nil, err
	}
	mem := new(sledMem)
	binary.LittleEndian.PutUint32(mem.bytes[:], w)
	binary.LittleEndian.PutUint32(mem.bytes[instLen:], nopWord)
	b, n := mem.bytes[:instLen:instLen], mem.bytes[instLen:2*instLen:2*instLen]
	sl := arch.Sled{Toggle: instLen, Target: s.Taken}
	if s.OnZero {
		sl.Off, sl.On = b, n
	} else {
		sl.Off, sl.On = n, b
	}
	return sl, mem, nil
}

// loadDead proves that the site's flag load can become NOPs: its temporary is X27
// (REGTMP, which the Go assembler uses only inside one expanded instruction and the
// compiler never allocates) or Wn itself, and Wn is dead on both paths after the branch
// (regDead, with call saying what each BL does). follow has already proven that
// nothing between the load and the branch uses Wn.
func loadDead(m arch.Memory, s arch.Site, call func(target uint64) arch.CallEffect) error {
	if s.Check.Tmp != 27 && s.Check.Tmp != s.Check.Reg {
		return shapeErr(s.Check.Addr, "flag load goes through X%d, not REGTMP", s.Check.Tmp)
	}
	for _, pc := range []uint64{s.Fire(), s.Skip()} {
		if err := regDead(m, pc, s.Check.Reg, call); err != nil {
			return err
		}
	}
	return nil
}
