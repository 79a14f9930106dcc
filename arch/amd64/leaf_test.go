package amd64

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
)

// TestLeafEntry holds the rule of which first instructions of a leaf a 5-byte jump may
// replace and a slot run out of line (fprobe's DESIGN.md, "Leaves") against
// instructions whose answer is known.
func TestLeafEntry(t *testing.T) {
	for _, c := range []struct {
		code []byte
		name string
		why  string // "" if the instruction is taken
	}{
		{[]byte{0x48, 0xC7, 0xC0, 0x01, 0, 0, 0}, "MOVQ $1, AX", ""},
		{[]byte{0xB8, 0x01, 0, 0, 0}, "MOVL $1, AX", ""},
		{[]byte{0x48, 0x89, 0x44, 0x24, 0x08}, "MOVQ AX, 8(SP)", ""},
		{[]byte{0x44, 0x0F, 0x11, 0x7C, 0x24, 0x08}, "MOVUPS X15, 8(SP)", ""},
		{[]byte{0x48, 0x8D, 0x98, 0x00, 0x01, 0, 0}, "LEAQ 0x100(AX), BX", ""},
		{[]byte{0x48, 0x81, 0xF9, 0x00, 0x01, 0, 0}, "CMPQ CX, $0x100", ""},
		{[]byte{0x48, 0x8B, 0x58, 0x08}, "MOVQ 8(AX), BX", "after the loads that run in place passes control"}, // in place, then RET
		{[]byte{0x31, 0xC0}, "XORL AX, AX", "shorter than the jump"},
		{[]byte{0x55}, "PUSHQ BP", "shorter than the jump"},
		{[]byte{0x48, 0x8B, 0x98, 0x00, 0x01, 0, 0}, "MOVQ 0x100(AX), BX", "after the loads that run in place passes control"},
		{[]byte{0x48, 0x03, 0x58, 0x08}, "ADDQ 8(AX), BX", "may fault"}, // reads memory, writes flags: not in place
		{[]byte{0xC7, 0x40, 0x10, 0x01, 0, 0, 0}, "MOVL $1, 0x10(AX)", "may fault"},
		{[]byte{0x48, 0x8D, 0x05, 0x10, 0, 0, 0}, "LEAQ 0x10(IP), AX", ""},
		{[]byte{0xF2, 0x0F, 0x10, 0x0D, 0x10, 0, 0, 0}, "MOVSD 0x10(IP), X1", ""},
		{[]byte{0xFF, 0x25, 0x10, 0, 0, 0}, "JMP *0x10(IP)", "passes control"},
		{[]byte{0x48, 0xC7, 0xC4, 0, 0, 0, 0}, "MOVQ $0, SP", "names SP"},
		{[]byte{0x48, 0x81, 0xD0, 0xE8, 0x03, 0, 0}, "ADCQ $1000, AX", "reads the flags"},
		{[]byte{0x48, 0xF7, 0xB4, 0x24, 0x08, 0, 0, 0}, "DIVQ 8(SP)", "may fault"},
		{[]byte{0x0F, 0x29, 0x44, 0x24, 0x08}, "MOVAPS X0, 8(SP)", "not a form"},
		{[]byte{0xE9, 0, 0, 0, 0}, "JMP", "passes control"},
		{[]byte{0x4C, 0x8D, 0x64, 0x24, 0xF0}, "LEAQ -16(SP), R12", "a stack check"},
	} {
		b := append(append([]byte(nil), c.code...), 0xC3)
		const pc = 0x10000
		m := arch.Bytes{Base: pc, Code: b}
		w, err := walk(m, pc, pc+uint64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		e, err := leafEntry(m, w)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s (% x): refused: %v", c.name, c.code, err)
		case c.why == "" && (e.Addr != pc || e.Resume != pc+uint64(len(c.code)) || !bytes.Equal(e.Orig, c.code)):
			t.Errorf("%s: %+v", c.name, e)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%s (% x): %v, want a refusal saying %q", c.name, c.code, err, c.why)
		}
	}
	// A RIP-relative operand: where its displacement is, and what it names.
	code := []byte{0x48, 0x81, 0x3D, 0x10, 0, 0, 0, 0x78, 0x56, 0x34, 0x12, 0xC3} // CMPQ 0x10(IP), $0x12345678
	m := arch.Bytes{Base: 0x10000, Code: code}
	w, err := walk(m, 0x10000, 0x10000+uint64(len(code)))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := leafEntry(m, w); err != nil || e.Rel != 4 || e.Target != 0x10000+11+0x10 {
		t.Errorf("CMPQ 0x10(IP), $imm32: Rel %d Target %#x, %v; want 4, %#x", e.Rel, e.Target, err, 0x10000+11+0x10)
	}
	// The words of the argument area the code reads.
	for _, c := range []struct {
		code []byte
		want uint64
	}{
		{[]byte{0x48, 0xC7, 0xC0, 0x01, 0, 0, 0, 0xC3}, 0},                                        // MOVQ $1, AX; RET
		{[]byte{0x48, 0xC7, 0xC0, 0x01, 0, 0, 0, 0x48, 0x8B, 0x44, 0x24, 0x10, 0xC3}, 0b110},      // ...; MOVQ 16(SP), AX
		{[]byte{0x48, 0xC7, 0xC0, 0x01, 0, 0, 0, 0x48, 0x8D, 0x44, 0x24, 0x08, 0xC3}, ^uint64(0)}, // ...; LEAQ 8(SP), AX
		{[]byte{0x48, 0xC7, 0xC0, 0x01, 0, 0, 0, 0x48, 0x89, 0xE0, 0xC3}, ^uint64(0)},             // ...; MOVQ SP, AX
	} {
		m := arch.Bytes{Base: 0x10000, Code: c.code}
		w, err := walk(m, 0x10000, 0x10000+uint64(len(c.code)))
		if err != nil {
			t.Fatal(err)
		}
		if e, err := leafEntry(m, w); err != nil || e.ArgReads != c.want {
			t.Errorf("% x: ArgReads %#x, %v; want %#x", c.code, e.ArgReads, err, c.want)
		}
	}
	// Punned jumps: a first instruction under 5 bytes, in a function long enough for
	// the 4 bytes after its opcode to be its own; the entry's first byte alone changes.
	for _, c := range []struct {
		code []byte
		n    int // the first instruction's length
		name string
	}{
		{[]byte{0x31, 0xC0, 0x48, 0xFF, 0xC0, 0xC3}, 2, "XORL AX, AX; INCQ AX; RET"},
		{[]byte{0x48, 0x89, 0xC1, 0x48, 0x01, 0xC8, 0xC3}, 3, "MOVQ AX, CX; ADDQ CX, AX; RET"},
		{[]byte{0x55, 0x48, 0x89, 0xE5, 0x48, 0x83, 0xEC, 0x10, 0x48, 0x83, 0xC4, 0x10, 0x5D, 0xC3}, 1, "PUSHQ BP; MOVQ SP, BP; SUBQ $16, SP; ADDQ $16, SP; POPQ BP; RET"},
	} {
		m := arch.Bytes{Base: 0x10000, Code: c.code}
		w, err := walk(m, 0x10000, 0x10000+uint64(len(c.code)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		e, err := leafEntry(m, w)
		if err != nil || !e.Pun || !bytes.Equal(e.Orig, c.code[:c.n]) || e.Resume != 0x10000+uint64(c.n) {
			t.Errorf("%s: %+v, %v; want a punned jump over the first %d bytes", c.name, e, err, c.n)
		}
	}
	// Loads that may fault run in place; the jump goes over the next instruction, and
	// Before names the registers they wrote.
	for _, c := range []struct {
		code   []byte
		addr   int // where the jump goes, from the entry
		before uint32
		pun    bool
		why    string
		name   string
	}{
		{[]byte{0x48, 0x8B, 0x08, 0x48, 0x8D, 0x04, 0x49, 0x48, 0x83, 0xC0, 0x01, 0xC3}, 3, 1 << 1, true, "", "MOVQ (AX), CX; LEAQ (CX)(CX*2), AX; ADDQ $1, AX; RET"},
		{[]byte{0x48, 0x8B, 0x08, 0x0F, 0xB6, 0x50, 0x08, 0x48, 0xC7, 0xC0, 0x01, 0, 0, 0, 0xC3}, 7, 1<<1 | 1<<2, false, "", "MOVQ (AX), CX; MOVZX 8(AX), DX; MOVQ $1, AX; RET"},
		{[]byte{0x4C, 0x8B, 0x20, 0x48, 0xC7, 0xC0, 0x01, 0, 0, 0, 0xC3}, 0, 0, false, "may fault", "MOVQ (AX), R12: a register the stub clobbers"},
		{[]byte{0x48, 0x8B, 0x08, 0x48, 0x8B, 0x08, 0x48, 0x8B, 0x08, 0x48, 0x8B, 0x08, 0x48, 0x8B, 0x08, 0x48, 0xC7, 0xC0, 0x01, 0, 0, 0, 0xC3}, 0, 0, false, "more than 4 loads", "five loads"},
		{[]byte{0x48, 0x8B, 0x08, 0xEB, 0xFB, 0xC3}, 0, 0, false, "passes control", "MOVQ (AX), CX; JMP back"},
	} {
		m := arch.Bytes{Base: 0x10000, Code: c.code}
		w, err := walk(m, 0x10000, 0x10000+uint64(len(c.code)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		e, err := leafEntry(m, w)
		switch {
		case c.why != "":
			if err == nil || !strings.Contains(err.Error(), c.why) {
				t.Errorf("%s: %+v, %v; want a refusal saying %q", c.name, e, err, c.why)
			}
		case err != nil || e.Addr != 0x10000+uint64(c.addr) || e.Before != c.before || e.Pun != c.pun:
			t.Errorf("%s: %+v, %v; want the jump at +%d, Before %#b, punned %v", c.name, e, err, c.addr, c.before, c.pun)
		}
	}
	// A branch back to an instruction up to the jump: the probe would fire per pass.
	back := []byte{0x48, 0x8B, 0x08, 0x48, 0xC7, 0xC0, 0x01, 0, 0, 0, 0x75, 0xF7, 0xC3} // MOVQ (AX), CX; MOVQ $1, AX; JNE +3; RET
	m = arch.Bytes{Base: 0x10000, Code: back}
	if w, err := walk(m, 0x10000, 0x10000+uint64(len(back))); err != nil {
		t.Fatal(err)
	} else if _, err := leafEntry(m, w); err == nil || !strings.Contains(err.Error(), "up to its probe's jump") {
		t.Errorf("a branch to the instruction the jump covers: %v", err)
	}
	// A leaf with a frame names its arguments from a lower SP: with the pc tables' SP
	// delta its reads are those of the entry's SP, and its frame's own moves and its
	// locals' addresses are not reads of the argument area.
	frame := []byte{
		0x55,             // PUSHQ BP           delta 0
		0x48, 0x89, 0xE5, //       MOVQ SP, BP        8
		0x48, 0x83, 0xEC, 0x10, // SUBQ $16, SP       8
		0x48, 0x8D, 0x0C, 0x24, // LEAQ 0(SP), CX     24: a local's address
		0x48, 0x89, 0x04, 0xCC, // MOVQ AX, 0(SP)(CX*8)  24: a local array's element
		0x48, 0x8B, 0x44, 0x24, 0x28, // MOVQ 40(SP), AX  24: the entry's 16(SP), word 1
		0x48, 0x83, 0xC4, 0x10, // ADDQ $16, SP       24
		0x5D, // POPQ BP            8
		0xC3, // RET                0
	}
	deltas := map[uint64]int32{0: 0, 1: 8, 4: 8, 8: 24, 12: 24, 16: 24, 21: 24, 25: 8, 26: 0}
	m = arch.Bytes{Base: 0x10000, Code: frame}
	w, err = walk(m, 0x10000, 0x10000+uint64(len(frame)))
	if err != nil {
		t.Fatal(err)
	}
	w.SPDelta = func(pc uint64) int32 {
		if d, ok := deltas[pc-0x10000]; ok {
			return d
		}
		return -1
	}
	if e, err := leafEntry(m, w); err != nil || e.ArgReads != 0b110 {
		t.Errorf("a leaf with a frame: ArgReads %#b, %v; want %#b (the entry's 16(SP) and the word after)", e.ArgReads, err, 0b110)
	}
	w.SPDelta = nil
	if e, _ := leafEntry(m, w); e.ArgReads != ^uint64(0) {
		t.Errorf("a leaf with a frame, without its pc tables: ArgReads %#x, want all", e.ArgReads)
	}
	// A loop back to the entry: the probe would fire on each pass.
	b := []byte{0xB8, 0x01, 0, 0, 0, 0xEB, 0xF9, 0xC3} // MOVL $1, AX; JMP entry; RET
	m = arch.Bytes{Base: 0x10000, Code: b}
	w, err = walk(m, 0x10000, 0x10000+uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leafEntry(m, w); err == nil || !strings.Contains(err.Error(), "targets its entry") {
		t.Errorf("a loop to the entry: %v", err)
	}
}
