package arm64

import (
	"encoding/binary"

	"golang.org/x/arch/arm64/arm64asm"
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

// NOPWord is the A64 NOP (HINT #0).
const NOPWord uint32 = 0xD503201F

// Range of B's signed, word-scaled 26-bit offset: ±128 MiB.
const (
	MinB = -(1 << 27)
	MaxB = 1<<27 - 4
)

// NOP returns n/4 NOP instructions (n rounded down to whole instructions).
func NOP(n int) []byte {
	b := make([]byte, 0, max(n, 0))
	for ; n >= InstLen; n -= InstLen {
		b = binary.LittleEndian.AppendUint32(b, NOPWord)
	}
	return b
}

// EncodeB returns B to at from: both 4-byte aligned, to - from within [MinB, MaxB].
func EncodeB(from, to uint64) ([]byte, error) {
	off := int64(to - from)
	if from%InstLen != 0 || to%InstLen != 0 {
		return nil, shapeErr(from, "B to %#x: unaligned", to)
	}
	if off < MinB || off > MaxB {
		return nil, shapeErr(from, "B to %#x: offset %d out of the ±128MiB range", to, off)
	}
	w := 0x14000000 | uint32(off>>2)&0x03FFFFFF
	return binary.LittleEndian.AppendUint32(nil, w), nil
}

// Sled is a site's canonical replacement: two 4-byte forms, B and NOP.
type Sled struct {
	Off, On []byte // disabled form, enabled form
	Toggle  int    // always 4: the whole site is its one instruction
	Target  uint64 // where the B form goes
}

// Canonical returns the canonical sled for s: the B form goes where the branch was
// taken; for CBZ/TBZ (taken when clear) it is the disabled form, for CBNZ/TBNZ the
// enabled one.
func Canonical(s Site) (Sled, error) {
	switch s.Op {
	case arm64asm.CBZ, arm64asm.CBNZ, arm64asm.TBZ, arm64asm.TBNZ:
	default:
		return Sled{}, shapeErr(s.Addr, "site branch is %v, not CBZ/CBNZ/TBZ/TBNZ", s.Op)
	}
	b, err := EncodeB(s.Addr, s.Taken)
	if err != nil {
		return Sled{}, err
	}
	sl := Sled{Toggle: InstLen, Target: s.Taken}
	if s.branchesOnZero() {
		sl.Off, sl.On = b, NOP(InstLen)
	} else {
		sl.Off, sl.On = NOP(InstLen), b
	}
	return sl, nil
}

// LoadDead proves that the site's flag load can become NOPs: its temporary is X27
// (REGTMP, which the Go assembler uses only inside one expanded instruction and the
// compiler never allocates) or Wn itself, and Wn is dead on both paths after the branch
// (RegDead, with call saying what each BL does). FollowLoad has already proven that
// nothing between the load and the branch uses Wn.
func LoadDead(m Memory, s Site, call func(target uint64) CallEffect) error {
	if s.Tmp != 27 && s.Tmp != s.Reg {
		return shapeErr(s.Load.Addr, "flag load goes through X%d, not REGTMP", s.Tmp)
	}
	for _, pc := range []uint64{s.Fire(), s.Skip()} {
		if err := RegDead(m, pc, s.Reg, call); err != nil {
			return err
		}
	}
	return nil
}
