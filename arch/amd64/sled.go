package amd64

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/gosdt/gosdt/arch"
)

// The canonical sled replaces a site's CMPB [NOPs] Jcc, in place and with the
// same length, by one 2- or 5-byte instruction and NOPs, whose two forms differ in one
// byte only:
//
//	rel8:  EB d_off   | EB d_on       JMP, its displacement the toggle (the byte at +1)
//	rel32: E9 rel32   | A9 rel32      JMP or TEST EAX,imm32, its opcode the toggle (+0)
//	then:  Intel's recommended NOPs, identical in both forms
//
// A one-byte store is single-copy atomic at any address, so every run-time switch is
// one store and needs no rendezvous, and nothing moves the toggle: the disabled form
// of a JE site is its JMP alone, at every address (an earlier sled put a NOP before a
// toggle that straddled an aligned 8-byte word: two instructions at those sites).
// With rel8 both forms jump: to the Jcc's taken target and to the end of the site,
// where the Jcc fell through (d_on = Len-2, past the NOPs). With rel32 the form that
// does not jump is TEST EAX,imm32, whose immediate is the JMP's displacement: it writes
// only the flags, which seal proves dead where either form goes.
//
// For JE (Go's usual layout: fire block inline) the JMP to the taken target is the
// disabled form (JMP skip); for JNE it is the enabled form (JMP fire), and the disabled
// form is the JMP to the end of the site (rel8) or TEST and NOPs (rel32). After the
// one-time conversion only the toggle byte ever changes, so a goroutine preempted
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

// jumps reports whether code starts with a JMP (Arch.Jumps): a sled's form that jumps
// past the rest of the sled.
func jumps(code []byte) bool { return len(code) > 0 && (code[0] == 0xEB || code[0] == 0xE9) }

// opTEST32 is TEST EAX,imm32: the rel32 toggle's form that falls through.
const opTEST32 = 0xA9

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

// canonical returns the canonical sled for s. The JMP form jumps to s.Taken: for JE
// that is the disabled form (JMP skip), for JNE the enabled form (JMP fire). With a
// rel8 displacement from the site's end the other form jumps to the end of the site
// (toggle: the displacement byte); otherwise the JMP is E9 rel32 and the other form
// TEST EAX with the same 4 bytes (toggle: the opcode). NOPs fill the rest.
func canonical(s arch.Site) (arch.Sled, error) {
	if s.Branch != "JE" && s.Branch != "JNE" {
		return arch.Sled{}, shapeErr(s.Addr, "site branch is %q, not JE/JNE", s.Branch)
	}
	if s.Len < minSiteLen {
		return arch.Sled{}, shapeErr(s.Addr, "site is %d bytes, shorter than %d", s.Len, minSiteLen)
	}
	var jumping, other []byte
	sl := arch.Sled{Toggle: 1, Target: s.Taken}
	if fitsRel8(s.Addr, s.Taken) {
		jumping = encodeJMP8(s.Addr, s.Taken)
		other = encodeJMP8(s.Addr, s.Addr+uint64(s.Len))
		sl.At = 1
	} else {
		var err error
		if jumping, err = encodeJMP32(s.Addr, s.Taken); err != nil {
			return arch.Sled{}, shapeErr(s.Addr, "%v", err)
		}
		other = append([]byte{opTEST32}, jumping[1:]...)
	}
	tail := nop(s.Len - len(jumping))
	jumping = slices.Concat(jumping, tail)
	other = slices.Concat(other, tail)
	if s.OnZero {
		sl.Off, sl.On = jumping, other
	} else {
		sl.Off, sl.On = other, jumping
	}
	return sl, nil
}

// AtomicStore reports whether an n-byte store at addr is single-copy atomic on
// every x86-64 implementation: both Intel (SDM vol. 3A 9.1.1) and AMD (APM
// vol. 2 7.3.2) guarantee it for cacheable stores contained in one naturally
// aligned quadword; a one-byte store, canonical's toggle, anywhere. Package patch
// stores a toggle at once where this holds.
func AtomicStore(addr uint64, n int) bool {
	return n >= 1 && n <= 8 && addr%8+uint64(n) <= 8
}
