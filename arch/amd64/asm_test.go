package amd64

import (
	"encoding/binary"
	"fmt"
	"github.com/gosdt/gosdt/arch"
)

// asm is a tiny label-resolving assembler for the handful of encodings the
// tests need. All branches and RIP-relative operands take labels or absolute
// addresses.
type asm struct {
	base   uint64
	b      []byte
	labels map[string]uint64
	fix    []fixup
}

type fixup struct {
	at    int    // offset of the displacement
	size  int    // 1 or 4
	end   int    // offset of the end of the instruction
	label string // label, or "" for abs
	abs   uint64
}

func newAsm(base uint64) *asm { return &asm{base: base, labels: map[string]uint64{}} }

func (a *asm) pc() uint64 { return a.base + uint64(len(a.b)) }

func (a *asm) label(name string) *asm { a.labels[name] = a.pc(); return a }

func (a *asm) raw(b ...byte) *asm { a.b = append(a.b, b...); return a }

// ref emits a displacement to target (a string label or a uint64 address)
// relative to the end of the instruction, which ends trail bytes later.
func (a *asm) ref(target any, size, trail int) {
	f := fixup{at: len(a.b), size: size, end: len(a.b) + size + trail}
	switch t := target.(type) {
	case string:
		f.label = t
	case uint64:
		f.abs = t
	default:
		panic(fmt.Sprintf("bad target %T", target))
	}
	a.fix = append(a.fix, f)
	a.b = append(a.b, make([]byte, size)...)
}

func (a *asm) nop(n int) *asm     { return a.raw(nop(n)...) }
func (a *asm) cmpb(flag any) *asm { a.raw(0x80, 0x3D); a.ref(flag, 4, 1); return a.raw(0) }
func (a *asm) je8(t any) *asm     { a.raw(0x74); a.ref(t, 1, 0); return a }
func (a *asm) je32(t any) *asm    { a.raw(0x0F, 0x84); a.ref(t, 4, 0); return a }
func (a *asm) jne32(t any) *asm   { a.raw(0x0F, 0x85); a.ref(t, 4, 0); return a }
func (a *asm) jbe8(t any) *asm    { a.raw(0x76); a.ref(t, 1, 0); return a }
func (a *asm) jmp8(t any) *asm    { a.raw(0xEB); a.ref(t, 1, 0); return a }
func (a *asm) jmp32(t any) *asm   { a.raw(0xE9); a.ref(t, 4, 0); return a }
func (a *asm) call(t any) *asm    { a.raw(0xE8); a.ref(t, 4, 0); return a }
func (a *asm) leaAX(t any) *asm   { a.raw(0x48, 0x8D, 0x05); a.ref(t, 4, 0); return a }
func (a *asm) leaBX(t any) *asm   { a.raw(0x48, 0x8D, 0x1D); a.ref(t, 4, 0); return a }
func (a *asm) ret() *asm          { return a.raw(0xC3) }
func (a *asm) int3(n int) *asm {
	for range n {
		a.raw(0xCC)
	}
	return a
}
func (a *asm) movSpill() *asm        { return a.raw(0x48, 0x89, 0x4C, 0x24, 0x20) } // MOVQ CX, 0x20(SP)
func (a *asm) addSP() *asm           { return a.raw(0x48, 0x83, 0xC4, 0x20) }       // ADDQ $0x20, SP
func (a *asm) popBP() *asm           { return a.raw(0x5D) }
func (a *asm) incCX() *asm           { return a.raw(0x48, 0xFF, 0xC1) }               // INCQ CX
func (a *asm) cmpAXCX() *asm         { return a.raw(0x48, 0x39, 0xC8) }               // CMPQ CX, AX
func (a *asm) stackCheck(t any) *asm { return a.raw(0x49, 0x3B, 0x66, 0x10).jbe8(t) } // CMPQ SP, 0x10(R14); JBE
func (a *asm) movImm(v uint32) *asm {
	b := []byte{0xB8, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], v)
	return a.raw(b...)
}
func (a *asm) at(label string) uint64 { return a.labels[label] }
func (a *asm) mem() arch.Bytes        { return arch.Bytes{Base: a.base, Code: a.bytes()} }

func (a *asm) bytes() []byte {
	for _, f := range a.fix {
		t := f.abs
		if f.label != "" {
			var ok bool
			if t, ok = a.labels[f.label]; !ok {
				panic("undefined label " + f.label)
			}
		}
		d := int64(t - (a.base + uint64(f.end)))
		switch f.size {
		case 1:
			if d < -128 || d > 127 {
				panic(fmt.Sprintf("rel8 out of range to %s", f.label))
			}
			a.b[f.at] = byte(int8(d))
		case 4:
			binary.LittleEndian.PutUint32(a.b[f.at:], uint32(int32(d)))
		}
	}
	return a.b
}
