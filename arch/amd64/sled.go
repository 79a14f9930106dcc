package amd64

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/gosdt/gosdt/arch"
)

// The canonical sled replaces a site's CMPB [NOPs] Jcc, in place and with the
// same length, by an optional leading NOP, a toggle instruction and NOPs:
//
//	lead:      none | 90 | 0F 1F 00 | 0F 1F 40 00   identical in both forms
//	JMP form:  EB rel8 | E9 rel32            jumps to the Jcc's taken target
//	NOP form:  66 90   | 0F 1F 44 00 00      falls through
//	then:      Intel's recommended NOPs, identical in both forms
//
// The lead is there only to move the toggle inside one naturally aligned 8-byte
// word, where a store of it is single-copy atomic (see AtomicStore): a 2-byte
// toggle at addr%8 == 7 gets a 1-byte lead, a 5-byte one at addr%8 > 3 a lead of
// 1, 3 or 4 bytes (never 2: a 2-byte lead would read like a 2-byte toggle). A
// site is at least 9 bytes, so lead and toggle always fit. Then every run-time
// switch of every site is one aligned store and never needs the rendezvous.
//
// For JE (Go's usual layout: fire block inline) the JMP form is the disabled
// form (JMP skip); for JNE it is the enabled form (JMP fire). After the one-time
// conversion only bytes [At, At+Toggle) ever change, so a goroutine preempted
// anywhere in the sled resumes on an instruction boundary of either form.

// nops are Intel's recommended multi-byte NOPs (SDM vol. 2B, NOP), the same
// table Go's assembler pads with. nops[i] is i+1 bytes long.
var nops = [...][]byte{
	{0x90},
	{0x66, 0x90},
	{0x0F, 0x1F, 0x00},
	{0x0F, 0x1F, 0x40, 0x00},
	{0x0F, 0x1F, 0x44, 0x00, 0x00},
	{0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00},
	{0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00},
	{0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	{0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
}

// maxNOP is the longest single NOP that nop uses.
const maxNOP = len(nops)

// minSiteLen is the shortest possible site: CMPB (7 bytes) + JE rel8 (2 bytes).
const minSiteLen = 9

// nop returns n bytes of NOPs in the fewest instructions: the remainder (n mod 9)
// first, then 9-byte NOPs. nop(n) for n <= 0 is empty.
func nop(n int) []byte {
	if n <= 0 {
		return nil
	}
	b := make([]byte, 0, n)
	if r := n % maxNOP; r != 0 {
		b = append(b, nops[r-1]...)
	}
	for len(b) < n {
		b = append(b, nops[maxNOP-1]...)
	}
	return b
}

// fitsRel8 and fitsRel32 report whether to is reachable from the end of a
// 2-byte or 5-byte JMP at from.
func fitsRel8(from, to uint64) bool {
	d := int64(to - (from + 2))
	return d >= math.MinInt8 && d <= math.MaxInt8
}

func fitsRel32(from, to uint64) bool {
	d := int64(to - (from + 5))
	return d >= math.MinInt32 && d <= math.MaxInt32
}

// encodeJMP8 returns EB rel8 at from to to, which must fit (fitsRel8).
func encodeJMP8(from, to uint64) []byte {
	return []byte{0xEB, byte(int8(int64(to - (from + 2))))}
}

// encodeJMP32 returns E9 rel32 at from to to, or an error when the displacement from
// from+5 does not fit in 32 bits.
func encodeJMP32(from, to uint64) ([]byte, error) {
	if !fitsRel32(from, to) {
		return nil, fmt.Errorf("amd64: JMP from %#x to %#x out of rel32 range", from, to)
	}
	b := []byte{0xE9, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], uint32(int32(int64(to-(from+5)))))
	return b, nil
}

// jumps reports whether a toggle is its JMP form (Arch.Jumps).
func jumps(toggle []byte) bool { return len(toggle) > 0 && (toggle[0] == 0xEB || toggle[0] == 0xE9) }

// toggleAt is where a toggle of n bytes (2 or 5) goes in a site at addr: the first
// offset at which it lies inside one aligned 8-byte word, skipping offset 2 (see
// the layout above). It is at most 4.
func toggleAt(addr uint64, n int) int {
	for at := 0; ; at++ {
		if at != 2 && AtomicStore(addr+uint64(at), n) {
			return at
		}
	}
}

// leads are the leading NOPs by length; offset 2 is never used.
var leads = [...][]byte{nil, nops[0], nil, nops[2], nops[3]}

// seal proves the flags dead where either form of the sled sends control, which the
// compiler's CMPB set and its Jcc read, and returns the canonical sled (Arch.Seal).
func seal(m arch.Memory, s arch.Site, _ func(uint64) arch.CallEffect) (arch.Sled, error) {
	for _, pc := range []uint64{s.Fire(), s.Skip()} {
		if err := flagsDead(m, pc); err != nil {
			return arch.Sled{}, fmt.Errorf("flags may be live at %#x: %w", pc, err)
		}
	}
	return canonical(s)
}

// canonical returns the canonical sled for s. The JMP form jumps to s.Taken:
// for JE that is the disabled form (JMP skip), for JNE the enabled form (JMP
// fire); the other form is a NOP of the same length. The toggle is 2 bytes (EB
// rel8 <-> 66 90) when the displacement from its end fits rel8 in either
// direction, else 5 (E9 rel32 <-> 0F 1F 44 00 00); it sits at toggleAt, after a
// leading NOP when that is not 0, and is followed by nop(Len-At-Toggle).
func canonical(s arch.Site) (arch.Sled, error) {
	if s.Branch != "JE" && s.Branch != "JNE" {
		return arch.Sled{}, shapeErr(s.Addr, "site branch is %q, not JE/JNE", s.Branch)
	}
	if s.Len < minSiteLen {
		return arch.Sled{}, shapeErr(s.Addr, "site is %d bytes, shorter than %d", s.Len, minSiteLen)
	}
	at := toggleAt(s.Addr, 2)
	var jmp []byte
	if from := s.Addr + uint64(at); fitsRel8(from, s.Taken) {
		jmp = encodeJMP8(from, s.Taken)
	} else {
		at = toggleAt(s.Addr, 5)
		var err error
		if jmp, err = encodeJMP32(s.Addr+uint64(at), s.Taken); err != nil {
			return arch.Sled{}, shapeErr(s.Addr, "%v", err)
		}
	}
	lead := leads[at]
	tail := nop(s.Len - at - len(jmp))
	jumping := slices.Concat(lead, jmp, tail)
	nopping := slices.Concat(lead, nops[len(jmp)-1], tail)
	sl := arch.Sled{At: at, Toggle: len(jmp), Target: s.Taken}
	if s.OnZero {
		sl.Off, sl.On = jumping, nopping
	} else {
		sl.Off, sl.On = nopping, jumping
	}
	return sl, nil
}

// AtomicStore reports whether an n-byte store at addr is single-copy atomic on
// every x86-64 implementation: both Intel (SDM vol. 3A 9.1.1) and AMD (APM
// vol. 2 7.3.2) guarantee it for cacheable stores contained in one naturally
// aligned quadword. A 2-byte store fails this only at addr%8 == 7; a 5-byte
// one needs addr%8 <= 3. canonical places every toggle where this holds, and
// package patch stores a toggle at once where it does.
func AtomicStore(addr uint64, n int) bool {
	return n >= 1 && n <= 8 && addr%8+uint64(n) <= 8
}
