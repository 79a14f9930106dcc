package amd64

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"golang.org/x/arch/x86/x86asm"
)

// The canonical sled replaces a site's CMPB [NOPs] Jcc, in place and with the
// same length, by a toggle instruction followed by NOPs:
//
//	JMP form:  EB rel8 | E9 rel32            jumps to the Jcc's taken target
//	NOP form:  66 90   | 0F 1F 44 00 00      falls through
//	then:      Intel's recommended NOPs, identical in both forms
//
// For JE (Go's usual layout: fire block inline) the JMP form is the disabled
// form (JMP skip); for JNE it is the enabled form (JMP fire). After the one-time
// conversion only bytes [0, Toggle) ever change, so a goroutine preempted
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
// differ only in their first instruction.
type Sled struct {
	Off, On []byte // the whole site (Len bytes): disabled form, enabled form
	Toggle  int    // length of the first instruction; Off and On differ only in [0, Toggle)
	Target  uint64 // where the JMP form goes
}

// Jump returns the JMP form: Off for a JE site, On for a JNE site.
func (s Sled) Jump() []byte {
	if s.Off[0] == 0xEB || s.Off[0] == 0xE9 {
		return s.Off
	}
	return s.On
}

// Canonical returns the canonical sled for s. The JMP form jumps to s.Taken:
// for JE that is the disabled form (JMP skip), for JNE the enabled form (JMP
// fire); the other form is a NOP of the same length. Toggle is 2 (EB rel8 <->
// 66 90) when the displacement from Addr+2 fits rel8 in either direction, else
// 5 (E9 rel32 <-> 0F 1F 44 00 00). The bytes after the toggle are NOP(Len-Toggle).
func Canonical(s Site) (Sled, error) {
	if s.Op != x86asm.JE && s.Op != x86asm.JNE {
		return Sled{}, shapeErr(s.Addr, "site branch is %v, not JE/JNE", s.Op)
	}
	if s.Len < MinSiteLen {
		return Sled{}, shapeErr(s.Addr, "site is %d bytes, shorter than %d", s.Len, MinSiteLen)
	}
	jmp, err := EncodeJMP(s.Addr, s.Taken)
	if err != nil {
		return Sled{}, shapeErr(s.Addr, "%v", err)
	}
	tail := NOP(s.Len - len(jmp))
	jumping := append(append([]byte{}, jmp...), tail...)
	nop := append(append([]byte{}, nops[len(jmp)-1]...), tail...)
	sl := Sled{Toggle: len(jmp), Target: s.Taken}
	if s.Op == x86asm.JE {
		sl.Off, sl.On = jumping, nop
	} else {
		sl.Off, sl.On = nop, jumping
	}
	return sl, nil
}

// ParseSled recognises a canonical sled at addr, for re-reading sealed or
// already-patched text. It returns the JMP target when the first instruction
// is the JMP form (target is 0 for the NOP form, which does not carry it),
// whether it is, and the sled's length n. The tail is read as Canonical writes
// it: one NOP of any table length, then 9-byte NOPs. n is therefore exact
// unless the code after the sled itself begins with the 9-byte NOP
// 66 0F 1F 84 00 00 00 00 00; a caller with a site table should compare.
func ParseSled(m Memory, addr uint64) (target uint64, jumping bool, n int, err error) {
	b := m.Read(addr, 64)
	toggle := 0
	switch {
	case len(b) >= 2 && b[0] == 0xEB:
		target, jumping, toggle = addr+2+uint64(int64(int8(b[1]))), true, 2
	case len(b) >= 5 && b[0] == 0xE9:
		target, jumping, toggle = addr+5+uint64(int64(int32(binary.LittleEndian.Uint32(b[1:])))), true, 5
	case bytes.HasPrefix(b, nops[1]):
		toggle = 2
	case bytes.HasPrefix(b, nops[4]):
		toggle = 5
	default:
		return 0, false, 0, shapeErr(addr, "no sled toggle (JMP or 66 90 / 0F 1F 44 00 00) at % x", b[:min(len(b), 5)])
	}
	n = toggle
	for first := true; ; first = false {
		k := nopAt(b[n:])
		if k == 0 || !first && k != MaxNOP {
			break
		}
		n += k
	}
	if n < MinSiteLen {
		return 0, false, 0, shapeErr(addr, "sled of %d bytes, shorter than %d", n, MinSiteLen)
	}
	return target, jumping, n, nil
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
// aligned quadword. A 2-byte toggle fails this only at addr%8 == 7; a 5-byte
// one needs addr%8 <= 3. Patching code that gets false must stop the world.
func AtomicStore(addr uint64, n int) bool {
	return n >= 1 && n <= 8 && addr%8+uint64(n) <= 8
}
