package arm64

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
)

// TestLeafEntry holds the rule of which first words of a leaf may run out of line in a
// slot (fprobe's DESIGN.md, "Leaves") against words whose answer is known.
func TestLeafEntry(t *testing.T) {
	const pc = leafPC
	for _, c := range []struct {
		word uint32
		name string
		why  string // "" if the word is taken
	}{
		{0xAA0003E1, "MOVD R0, R1", ""},
		{0x91002001, "ADD $8, R0, R1", ""},
		{0xD28000A0, "MOVZ $5, R0", ""},
		{0xF94007E1, "MOVD 8(RSP), R1", ""},
		{0xA90087E0, "STP (R0, R1), 8(RSP)", ""},
		{0x1E604001, "FMOVD F0, F1", ""},
		{0xD503201F, "NOP", ""},
		{0x9B027C20, "MUL R2, R1, R0", ""},
		{0xD10043FF, "SUB $16, RSP, RSP", "writes SP"},
		{0xF9400401, "MOVD 8(R0), R1", "after the loads that run in place, passes control"}, // then RET
		{0xF81F0FFE, "MOVD.W R30, -16(RSP)", "not a form"},
		{0x90000000, "ADRP", ""},
		{0x10000040, "ADR", "reads its own pc"},
		{0x58000040, "LDR literal", "its own pc"},
		{0xB4000040, "CBZ R0", "passes control"},
		{0x54000040, "BEQ", "passes control"},
		{0x36000040, "TBZ", "passes control"},
		{0x9A820020, "CSEL EQ, R1, R2, R0", "reads the flags"},
		{0x9A020020, "ADC R2, R1, R0", "reads the flags"},
		{0x1E620C20, "FCSELD", "reads the flags"},
		{0xAA1003E0, "MOVD R16, R0", "R16 or R17"},
		{0xD65F03C0, "RET", "passes control"},
		{loadGuard, "MOVD 16(R28), R16", "a stack check"},
	} {
		e, err := leafOf(t, c.word, retLR)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s (%#08x): refused: %v", c.name, c.word, err)
		case c.why == "" && (e.Addr != pc || e.Resume != pc+4 || binary.LittleEndian.Uint32(e.Orig) != c.word):
			t.Errorf("%s: %+v", c.name, e)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%s (%#08x): %v, want a refusal saying %q", c.name, c.word, err, c.why)
		}
	}
	// A first instruction that may fault runs in place (TestLeafEntryInPlace).
	// The words of the argument area the code reads.
	for _, c := range []struct {
		words []uint32
		want  uint64
	}{
		{[]uint32{0xAA0003E1, retLR}, 0},
		{[]uint32{0xAA0003E1, 0xF9400BE0, retLR}, 0b10},       // MOVD 16(RSP), R0
		{[]uint32{0xAA0003E1, 0xA94107E0, retLR}, 0b110},      // LDP 16(RSP), (R0, R1): words 1, 2
		{[]uint32{0xAA0003E1, 0x910023E0, retLR}, ^uint64(0)}, // ADD $8, RSP, R0: an address taken
	} {
		if e, err := leafOf(t, c.words...); err != nil || e.ArgReads != c.want {
			t.Errorf("%#08x: ArgReads %#x, %v; want %#x", c.words, e.ArgReads, err, c.want)
		}
	}
	// The registers read before written: MOVD R0, R1; ADD R1, R2, R3; CBZ R3; MOVD R5, R1; RET
	if e, err := leafOf(t, 0xAA0003E1, 0x8B020023, 0xB4000043, 0xAA0503E1, retLR); err != nil || !e.LiveInKnown || e.LiveIn != 1<<0|1<<2|1<<5|1<<30 {
		t.Errorf("LiveIn %#x (%v), %v; want R0, R2, R5 and R30 (RET)", e.LiveIn, e.LiveInKnown, err)
	}
	// A loop back to the entry: the probe would fire on each pass.
	if _, err := leafOf(t, 0xAA0003E1, 0xB5FFFFE0 /* CBNZ R0, entry */, retLR); err == nil || !strings.Contains(err.Error(), "targets its entry") {
		t.Errorf("a loop to the entry: %v", err)
	}
}

// TestLeafEntryInPlace: loads and stores that may fault at a leaf's entry run in place,
// and the jump is written over the instruction after them, when they write only
// registers the stub keeps (or R27 the leaf never reads), no branch comes back among
// them, and that instruction may run in a slot.
func TestLeafEntryInPlace(t *testing.T) {
	const (
		ldr1   = 0xF9400401 // MOVD 8(R0), R1
		add    = 0x8B010020 // ADD R1, R1, R0
		nilchk = 0x3980001B // MOVB (R0), R27: a nil check
		movz   = 0xD28000A0 // MOVZ $5, R0
		useR27 = 0xAA1B03E0 // MOVD R27, R0
		ldr19  = 0xF9400013 // MOVD (R0), R19
		str    = 0xF9000001 // MOVD R1, (R0)
		back   = 0x17FFFFFF // B -4
		ldp    = 0xA9400801 // LDP (R0), (R1, R2)
	)
	const pc = leafPC
	for _, c := range []struct {
		name   string
		words  []uint32
		at     uint64 // the jump's offset from the entry
		before uint32
		why    string // "" if taken
	}{
		{"a load, then ADD", []uint32{ldr1, add, retLR}, 4, 1 << 1, ""},
		{"LDP, then ADD", []uint32{ldp, add, retLR}, 4, 1<<1 | 1<<2, ""},
		{"two loads, then ADD", []uint32{ldr1, ldp, add, retLR}, 8, 1<<1 | 1<<2, ""},
		{"a store, then MOVZ", []uint32{str, movz, retLR}, 4, 0, ""},
		{"a nil check into R27, then MOVZ", []uint32{nilchk, movz, retLR}, 4, 0, ""},
		{"a nil check into R27, which is read", []uint32{nilchk, useR27, retLR}, 0, 0, "does not keep"},
		{"a load into R19", []uint32{ldr19, add, retLR}, 0, 0, "does not keep"},
		{"a load, then RET", []uint32{ldr1, retLR}, 0, 0, "passes control"},
		{"five loads", []uint32{ldr1, ldr1, ldr1, ldr1, ldr1, add, retLR}, 0, 0, "first 5 instructions"},
		{"a branch back after the load", []uint32{ldr1, add, back, retLR}, 0, 0, "targets"},
	} {
		e, err := leafOf(t, c.words...)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.why == "" && (e.Addr != pc+c.at || e.Resume != pc+c.at+4 || e.Before != c.before ||
			binary.LittleEndian.Uint32(e.Orig) != c.words[c.at/4] || e.LiveIn&c.before != c.before):
			t.Errorf("%s: %+v, want the jump at +%d, Before %#x (live)", c.name, e, c.at, c.before)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%s: %v, want a refusal saying %q", c.name, err, c.why)
		}
	}
}

// leafPC is where leafOf places its code.
const leafPC = 0x10000

// leafOf is leafEntry of a function of words at leafPC.
func leafOf(t *testing.T, words ...uint32) (arch.LeafEntry, error) {
	t.Helper()
	var b []byte
	for _, x := range words {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	m := arch.Bytes{Base: leafPC, Code: b}
	w, err := walk(m, leafPC, leafPC+uint64(len(b)))
	if err != nil {
		t.Fatalf("% x: %v", b, err)
	}
	return leafEntry(m, w)
}
