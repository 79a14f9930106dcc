package amd64

import (
	"bytes"
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
//
// Not inlined: five callers each carried a copy of its loop.
//
//go:noinline
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
	if s.Taken >= s.Addr && s.Taken <= s.Addr+uint64(s.Len) {
		// To the site's end both forms would go the same way: a probe that could
		// never be switched. matchSite refuses these; so does the sled.
		return arch.Sled{}, shapeErr(s.Addr, "the branch targets %#x, inside the site or at its end", s.Taken)
	}
	var jumping, other []byte
	sl := arch.Sled{Toggle: 1, Target: s.Taken}
	rel8 := fitsRel8(s.Addr, s.Taken)
	n := 5
	if rel8 {
		n = 2
	}
	tail, probe := nop(s.Len-n), -1
	if s.OnZero {
		tail, probe = probeTail(s.Addr+uint64(n), s.Len-n)
	}
	if rel8 {
		jumping = encodeJMP8(s.Addr, s.Taken)
		// The form that does not jump to Taken jumps to the end of the site, or for a
		// JE site to its probe NOP, which the fire block follows.
		next := s.Addr + uint64(s.Len)
		if probe >= 0 {
			next = s.Addr + uint64(n+probe)
		}
		other = encodeJMP8(s.Addr, next)
		sl.At = 1
	} else {
		var err error
		if jumping, err = encodeJMP32(s.Addr, s.Taken); err != nil {
			return arch.Sled{}, shapeErr(s.Addr, "%v", err)
		}
		other = append([]byte{opTEST32}, jumping[1:]...)
	}
	jumping = slices.Concat(jumping, tail)
	other = slices.Concat(other, tail)
	if s.OnZero {
		sl.Off, sl.On = jumping, other
	} else {
		sl.Off, sl.On = other, jumping
	}
	return sl, nil
}

// nop5 is the 5-byte NOP on which Linux (6.18 and later, x86-64) optimizes a uprobe:
// after its first hit the kernel writes a CALL to a trampoline that enters the kernel
// by a syscall over it, instead of trapping on an INT3 at every hit.
var nop5 = nops[4]

// probeTail returns the n bytes of NOPs that follow the toggle instruction of a JE
// site's sled at addr, and the offset in them of the probe NOP: a 5-byte NOP that the
// enabled form runs just before the fire block, where sdtctl seal puts the site's USDT
// note. The disabled form jumps over all of them, so they cost nothing there. The probe
// NOP ends the tail unless it would cross a page, which the kernel refuses to
// optimize: then it ends at the page boundary, and NOPs fill the rest. probe is -1
// where n leaves no room for it.
func probeTail(addr uint64, n int) (tail []byte, probe int) {
	const page = 4096
	at := n - len(nop5) // offset of the probe NOP in the tail
	if start := addr + uint64(at); at >= 0 && start/page != (start+4)/page {
		at -= int((start + 5) % page)
	}
	if at < 0 {
		return nop(n), -1
	}
	return slices.Concat(nop(at), nop5, nop(n-at-len(nop5))), at
}

// probeNOP returns the offset in the enabled sled on, at addr, of the probe NOP its
// enabled form runs just before the fire block (probeTail), or -1 if it has none: a JNE
// site's (its fire block is elsewhere) or one too short to hold it.
func probeNOP(on []byte, addr uint64) int {
	var first inst
	if !decodeInst(on, &first) {
		return -1
	}
	end := addr + uint64(len(on))
	var want uint64 // the pc of the probe NOP
	switch {
	case first.op == opTEST32 && first.legacy(mapOne, opTEST32):
		// rel32 form that falls through: the probe NOP is the tail's first nop5.
	case first.flow == flowJmp && first.n == 2:
		want = first.target(addr)
		if want <= addr || want >= end {
			return -1 // jumps out of the sled: the fire block is elsewhere (JNE)
		}
	default:
		return -1
	}
	for off := int(first.n); off < len(on); {
		var in inst
		if !decodeInst(on[off:], &in) || !in.isNOP() {
			return -1
		}
		pc := addr + uint64(off)
		if bytes.Equal(on[off:off+int(in.n)], nop5) && (want == 0 || want == pc) {
			return off
		}
		off += int(in.n)
	}
	return -1
}

// uprobed reports whether text is the sled (either form) with a tracer's uprobe in it:
// equal to it but in 5-byte NOPs, which hold an INT3 or the kernel's CALL to its uprobe
// trampoline (probeTail). A sealed binary's site table is checked against such text
// when a tracer attached to the binary before the program started.
func uprobed(sled, text []byte) bool {
	if len(sled) != len(text) {
		return false
	}
	for off := 0; off < len(sled); {
		var in inst
		if !decodeInst(sled[off:], &in) {
			return false
		}
		end := off + int(in.n)
		if !bytes.Equal(sled[off:end], text[off:end]) {
			if !bytes.Equal(sled[off:end], nop5) || (text[off] != 0xCC && text[off] != 0xE8) {
				return false
			}
		}
		off = end
	}
	return true
}

// AtomicStore reports whether an n-byte store at addr is single-copy atomic on
// every x86-64 implementation: both Intel (SDM vol. 3A 9.1.1) and AMD (APM
// vol. 2 7.3.2) guarantee it for cacheable stores contained in one naturally
// aligned quadword; a one-byte store, canonical's toggle, anywhere. Package patch
// stores a toggle at once where this holds.
func AtomicStore(addr uint64, n int) bool {
	return n >= 1 && n <= 8 && addr%8+uint64(n) <= 8
}
