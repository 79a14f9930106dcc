package arm64

import (
	"encoding/binary"
	"fmt"
	"maps"
	"testing"

	"github.com/gosdt/gosdt/arch"
)

// a64Code decodes words placed at pc and checks that each is the instruction its
// comment says (arm64asm's syntax): the encodings below are written by hand.
func a64Code(t *testing.T, pc uint64, code []a64Word) []inst {
	t.Helper()
	b := make([]byte, 4*len(code))
	for i, c := range code {
		binary.LittleEndian.PutUint32(b[4*i:], c.w)
	}
	insts, err := decodeFunc(arch.Bytes{Base: pc, Code: b}, pc, pc+uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range insts {
		if got := in.Inst.String(); in.Bad || got != code[i].asm {
			t.Fatalf("%#08x decodes to %q (bad %v), want %q", code[i].w, got, in.Bad, code[i].asm)
		}
	}
	return insts
}

type a64Word struct {
	w   uint32
	asm string
}

// TestTrack covers the forms track64 follows, including those no Define in the
// test programs uses (MOVK, MOVN, LSL #12), and what makes it forget a register.
func TestTrack(t *testing.T) {
	insts := a64Code(t, 0x10000, []a64Word{
		{0xD2A24682, "MOV X2, #0x12340000"},
		{0xF28ACF02, "MOVK X2, #0x5678"},
		{0x12800003, "MOV W3, #0xffffffff"},
		{0x92800024, "MOV X4, #0xfffffffffffffffe"},
		{0x321E03E5, "ORR W5, WZR, #0x4"},
		{0xB0000006, "ADRP X6, .+0x1000"},
		{0x914004C6, "ADD X6, X6, #0x1, LSL #12"},
		{0x910020C7, "ADD X7, X6, #0x8"},
		{0xAA0703E8, "MOV X8, X7"},
		{0xA90123E7, "STP X7, X8, [SP,#16]"}, // a store: both stay known
		{0xD28000A9, "MOV X9, #0x5"},
		{0xF8008D26, "STR X6, [X9,#8]!"}, // writes X9 back
		{0xD280002A, "MOV X10, #0x1"},
		{0x910043EA, "ADD X10, SP, #0x10"},
		{0xF9400762, "LDR X2, [X27,#8]"},
		{0xD280016B, "MOV X11, #0xb"},
		{0xF2A0002B, "MOVK X11, #0x1, LSL #16"},
		{0xD100056B, "SUB X11, X11, #0x1"},
	})
	var r regValues
	for _, in := range insts {
		track64(in, &r)
	}
	regs := map[int]uint64{}
	for n := range 31 {
		if v, ok := r.get(n); ok {
			regs[n] = v
		}
	}
	want := map[int]uint64{3: 0xFFFFFFFF, 4: ^uint64(1), 5: 4, 6: 0x12000, 7: 0x12008, 8: 0x12008}
	if !maps.Equal(regs, want) {
		t.Errorf("registers %x, want %x", regs, want)
	}
}

// TestFlagStore checks the store of Define's result that names the variable, and
// that anything else is no store of it.
func TestFlagStore(t *testing.T) {
	const pc = 0x20000
	adrp := a64Word{0xB000001B, "ADRP X27, .+0x1000"} // page 0x21000
	for _, c := range []struct {
		name string
		code []a64Word
		flag uint64
	}{
		{"adrp+strb", []a64Word{adrp, {0x39110360, "STRB W0, [X27,#1088]"}}, 0x21440},
		{"adrp+add+strb", []a64Word{adrp, {0x9100837B, "ADD X27, X27, #0x20"}, {0x39000760, "STRB W0, [X27,#1]"}}, 0x21021},
		{"not W0", []a64Word{adrp, {0x39110361, "STRB W1, [X27,#1088]"}}, 0},
		{"other base", []a64Word{adrp, {0x39110340, "STRB W0, [X26,#1088]"}}, 0},
		{"add from elsewhere", []a64Word{adrp, {0x9100835B, "ADD X27, X26, #0x20"}, {0x39000760, "STRB W0, [X27,#1]"}}, 0},
		{"word store", []a64Word{adrp, {0xB9000360, "STR W0, [X27]"}}, 0},
		{"no adrp", []a64Word{{0x39000360, "STRB W0, [X27]"}}, 0},
	} {
		flag, ok := flagStore(a64Code(t, pc, c.code))
		if flag != c.flag || ok != (c.flag != 0) {
			t.Errorf("%s: %#x, %v; want %#x", c.name, flag, ok, c.flag)
		}
	}
}

// TestArgRegs: the USDT names of the argument registers, one for each of Go's.
func TestArgRegs(t *testing.T) {
	if len(Offline.ArgRegs) != abiRegs {
		t.Fatalf("%d register names, want %d", len(Offline.ArgRegs), abiRegs)
	}
	for i, name := range Offline.ArgRegs {
		if want := fmt.Sprintf("x%d", i); name != want {
			t.Errorf("argument register %d named %q, want %q", i, name, want)
		}
	}
}
