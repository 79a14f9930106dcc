package amd64

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"golang.org/x/arch/x86/x86asm"
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

// MaxNOP is the longest single NOP that NOP uses.
const MaxNOP = len(nops)

// MinSiteLen is the shortest possible site: CMPB (7 bytes) + JE rel8 (2 bytes).
const MinSiteLen = 9

// NOP returns n bytes of NOPs in the fewest instructions: the remainder
// (n mod 9) first, then 9-byte NOPs. Putting the odd one first makes a sled's
// end recognisable (see ParseSled). NOP(n) for n <= 0 is empty.
func NOP(n int) []byte {
	if n <= 0 {
		return nil
	}
	b := make([]byte, 0, n)
	if r := n % MaxNOP; r != 0 {
		b = append(b, nops[r-1]...)
	}
	for len(b) < n {
		b = append(b, nops[MaxNOP-1]...)
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

// EncodeJMP returns the shortest JMP at from to to: EB rel8 when the
// displacement from from+2 fits in [-128, 127], else E9 rel32 when the one from
// from+5 fits in 32 bits, else an error.
func EncodeJMP(from, to uint64) ([]byte, error) {
	if fitsRel8(from, to) {
		return []byte{0xEB, byte(int8(int64(to - (from + 2))))}, nil
	}
	return encodeJMP32(from, to)
}

func encodeJMP32(from, to uint64) ([]byte, error) {
	if !fitsRel32(from, to) {
		return nil, fmt.Errorf("amd64: JMP from %#x to %#x out of rel32 range", from, to)
	}
	b := []byte{0xE9, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], uint32(int32(int64(to-(from+5)))))
	return b, nil
}

// Sled is a site's canonical replacement: two forms of the same length that
// differ only in their toggle instruction.
type Sled struct {
	Off, On []byte // the whole site (Len bytes): disabled form, enabled form
	At      int    // offset of the toggle: the length of the leading NOP, often 0
	Toggle  int    // length of the toggle; Off and On differ only in [At, At+Toggle)
	Target  uint64 // where the JMP form goes
}

// Jump returns the JMP form: Off for a JE site, On for a JNE site.
func (s Sled) Jump() []byte {
	if isJMP(s.Off[s.At]) {
		return s.Off
	}
	return s.On
}

// isJMP reports whether op is the opcode of a toggle's JMP form.
func isJMP(op byte) bool { return op == 0xEB || op == 0xE9 }

// OffJumps reports whether off, a disabled sled whose toggle is at offset at, jumps
// at its toggle: then a goroutine stopped in it can be nowhere past the toggle.
func OffJumps(off []byte, at int) bool { return at < len(off) && isJMP(off[at]) }

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

// Canonical returns the canonical sled for s. The JMP form jumps to s.Taken:
// for JE that is the disabled form (JMP skip), for JNE the enabled form (JMP
// fire); the other form is a NOP of the same length. The toggle is 2 bytes (EB
// rel8 <-> 66 90) when the displacement from its end fits rel8 in either
// direction, else 5 (E9 rel32 <-> 0F 1F 44 00 00); it sits at toggleAt, after a
// leading NOP when that is not 0, and is followed by NOP(Len-At-Toggle).
func Canonical(s Site) (Sled, error) {
	if s.Op != x86asm.JE && s.Op != x86asm.JNE {
		return Sled{}, shapeErr(s.Addr, "site branch is %v, not JE/JNE", s.Op)
	}
	if s.Len < MinSiteLen {
		return Sled{}, shapeErr(s.Addr, "site is %d bytes, shorter than %d", s.Len, MinSiteLen)
	}
	at := toggleAt(s.Addr, 2)
	jmp, err := []byte(nil), error(nil)
	if from := s.Addr + uint64(at); fitsRel8(from, s.Taken) {
		jmp = []byte{0xEB, byte(int8(int64(s.Taken - (from + 2))))}
	} else {
		at = toggleAt(s.Addr, 5)
		if jmp, err = encodeJMP32(s.Addr+uint64(at), s.Taken); err != nil {
			return Sled{}, shapeErr(s.Addr, "%v", err)
		}
	}
	lead := leads[at]
	tail := NOP(s.Len - at - len(jmp))
	jumping := slices.Concat(lead, jmp, tail)
	nop := slices.Concat(lead, nops[len(jmp)-1], tail)
	sl := Sled{At: at, Toggle: len(jmp), Target: s.Taken}
	if s.Op == x86asm.JE {
		sl.Off, sl.On = jumping, nop
	} else {
		sl.Off, sl.On = nop, jumping
	}
	return sl, nil
}

// ParseSled recognises a canonical sled at addr, for re-reading sealed or
// already-patched text. It returns the JMP target when the toggle is the JMP form
// (target is 0 for the NOP form, which does not carry it), whether it is, where
// the toggle is, and the sled's length n. The lead is the one Canonical puts at
// addr for a toggle of that length; the tail is read as Canonical writes it: one
// NOP of any table length, then 9-byte NOPs. n is therefore exact unless the code
// after the sled begins with the 9-byte NOP 66 0F 1F 84 00 00 00 00 00, or with
// any NOP when the sled has no tail (a 9-byte site whose 5-byte toggle needed a
// 4-byte lead); a caller with a site table should compare.
func ParseSled(m Memory, addr uint64) (target uint64, jumping bool, at, n int, err error) {
	b := m.Read(addr, 64)
	toggle := 0
	for _, size := range []int{2, 5} {
		at = toggleAt(addr, size)
		if len(b) < at+size || !bytes.Equal(b[:at], leads[at]) {
			continue
		}
		t := b[at:]
		switch {
		case size == 2 && t[0] == 0xEB:
			target, jumping = addr+uint64(at)+2+uint64(int64(int8(t[1]))), true
		case size == 5 && t[0] == 0xE9:
			target, jumping = addr+uint64(at)+5+uint64(int64(int32(binary.LittleEndian.Uint32(t[1:])))), true
		case !bytes.HasPrefix(t, nops[size-1]):
			continue
		}
		toggle = size
		break
	}
	if toggle == 0 {
		return 0, false, 0, 0, shapeErr(addr, "no sled toggle (JMP or 66 90 / 0F 1F 44 00 00, after the lead for %#x) at % x", addr, b[:min(len(b), 9)])
	}
	n = at + toggle
	for first := true; ; first = false {
		k := nopAt(b[n:])
		if k == 0 || !first && k != MaxNOP {
			break
		}
		n += k
	}
	if n < MinSiteLen {
		return 0, false, 0, 0, shapeErr(addr, "sled of %d bytes, shorter than %d", n, MinSiteLen)
	}
	return target, jumping, at, n, nil
}

// nopAt returns the length of the table NOP that b starts with, or 0.
func nopAt(b []byte) int {
	for i := len(nops) - 1; i >= 0; i-- {
		if bytes.HasPrefix(b, nops[i]) {
			return i + 1
		}
	}
	return 0
}

// AtomicStore reports whether an n-byte store at addr is single-copy atomic on
// every x86-64 implementation: both Intel (SDM vol. 3A 9.1.1) and AMD (APM
// vol. 2 7.3.2) guarantee it for cacheable stores contained in one naturally
// aligned quadword. A 2-byte store fails this only at addr%8 == 7; a 5-byte
// one needs addr%8 <= 3. Canonical places every toggle where this holds.
func AtomicStore(addr uint64, n int) bool {
	return n >= 1 && n <= 8 && addr%8+uint64(n) <= 8
}
