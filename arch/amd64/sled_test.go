package amd64

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

var update = flag.Bool("update", false, "rewrite testdata/sleds.golden")

// decodeAll decodes b at pc into instructions that must end exactly at len(b).
func decodeAll(t *testing.T, b []byte, pc uint64) []Inst {
	t.Helper()
	var out []Inst
	for off := 0; off < len(b); {
		in, err := decodeBytes(b[off:], pc+uint64(off))
		if err != nil {
			t.Fatalf("decode % x at +%d: %v", b, off, err)
		}
		out = append(out, in)
		off += in.Len
		if off > len(b) {
			t.Fatalf("decode % x: instruction at +%d runs past the end", b, off-in.Len)
		}
	}
	return out
}

func TestEncodeJMP(t *testing.T) {
	const from = uint64(0x40_0000_0000)
	tests := []struct {
		name string
		to   uint64
		len  int // 0: error
	}{
		{"rel8 +0", from + 2, 2},
		{"rel8 +127 edge", from + 2 + 127, 2},
		{"rel32 +128 just past rel8", from + 2 + 128, 5},
		{"rel8 -128 edge", from + 2 - 128, 2},
		{"rel32 -129 just past rel8", from + 2 - 129, 5},
		{"rel8 self loop", from, 2},
		{"rel32 backward loop head", from - 0x100, 5},
		{"rel32 max", from + 5 + math.MaxInt32, 5},
		{"rel32 max+1", from + 5 + math.MaxInt32 + 1, 0},
		{"rel32 min", from + 5 - 1<<31, 5},
		{"rel32 min-1", from + 5 - 1<<31 - 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := EncodeJMP(from, tt.to)
			if tt.len == 0 {
				if err == nil {
					t.Fatalf("EncodeJMP(%#x, %#x) = % x, want range error", from, tt.to, b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != tt.len {
				t.Fatalf("len % x = %d, want %d", b, len(b), tt.len)
			}
			ins := decodeAll(t, b, from)
			if len(ins) != 1 || ins[0].Op != x86asm.JMP || ins[0].Target != tt.to {
				t.Fatalf("% x decodes as %v (target %#x), want JMP %#x", b, ins, ins[0].Target, tt.to)
			}
		})
	}
}

func TestNOP(t *testing.T) {
	for n := 0; n <= 20; n++ {
		b := NOP(n)
		if len(b) != n {
			t.Fatalf("NOP(%d) is %d bytes", n, len(b))
		}
		ins := decodeAll(t, b, 0x1000)
		if want := (n + MaxNOP - 1) / MaxNOP; len(ins) != want {
			t.Errorf("NOP(%d) = %d instructions, want %d", n, len(ins), want)
		}
		for i, in := range ins {
			if in.Op != x86asm.NOP {
				t.Errorf("NOP(%d) inst %d is %v", n, i, in.Inst)
			}
			if i > 0 && in.Len != MaxNOP {
				t.Errorf("NOP(%d) inst %d has length %d: only the first may be short", n, i, in.Len)
			}
		}
	}
	for i, b := range nops {
		if ins := decodeAll(t, b, 0); len(ins) != 1 || ins[0].Op != x86asm.NOP || ins[0].Len != i+1 {
			t.Errorf("nops[%d] = % x decodes as %v", i, b, ins)
		}
	}
}

// sledCases are the site shapes of the table and golden tests. Addr is fixed;
// Taken is given relative to Addr+2 (the end of a rel8 toggle).
var sledCases = []struct {
	name   string
	op     x86asm.Op
	len    int
	rel    int64 // Taken - (Addr+2)
	toggle int   // 0: Canonical must fail
}{
	{"JE rel8 fwd", x86asm.JE, 9, 0x30, 2},
	{"JE rel8 fwd +127", x86asm.JE, 9, 127, 2},
	{"JE rel8 fwd +128", x86asm.JE, 9, 128, 5},
	{"JE rel8 back -128", x86asm.JE, 9, -128, 2},
	{"JE rel8 back -129", x86asm.JE, 9, -129, 5},
	{"JE rel8 loop back", x86asm.JE, 9, -0x16, 2},
	{"JE pad3 rel8", x86asm.JE, 12, 0x20, 2},
	{"JE pad2 rel8", x86asm.JE, 11, 0x20, 2},
	{"JE rel32 fwd far", x86asm.JE, 13, 0x1234, 5},
	{"JE rel32 back far", x86asm.JE, 13, -0x1234, 5},
	{"JE rel32 near back", x86asm.JE, 13, -0x20, 2},
	{"JE pad3 rel32", x86asm.JE, 16, 0x400, 5},
	{"JE pad7 rel32", x86asm.JE, 20, -0x400, 5},
	{"JE pad9 rel32", x86asm.JE, 22, 0x400, 5},
	{"JNE rel8 fwd", x86asm.JNE, 9, 0x40, 2},
	{"JNE rel8 -128", x86asm.JNE, 9, -128, 2},
	{"JNE rel32 fwd", x86asm.JNE, 13, 0x800, 5},
	{"JNE rel32 back", x86asm.JNE, 13, -0x800, 5},
	{"JE too far", x86asm.JE, 13, 1 << 33, 0},
	{"JE too short", x86asm.JE, 8, 0x10, 0},
	{"JB not a site", x86asm.JB, 9, 0x10, 0},
}

const sledAddr = uint64(0x47a766)

func TestCanonical(t *testing.T) {
	for _, tt := range sledCases {
		t.Run(tt.name, func(t *testing.T) {
			s := Site{Addr: sledAddr, Len: tt.len, Flag: 0x525350, Op: tt.op,
				Taken: sledAddr + 2 + uint64(tt.rel), Next: sledAddr + uint64(tt.len)}
			sl, err := Canonical(s)
			if tt.toggle == 0 {
				if err == nil {
					t.Fatalf("Canonical = %+v, want error", sl)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sl.Toggle != tt.toggle || sl.Target != s.Taken || len(sl.Off) != s.Len || len(sl.On) != s.Len {
				t.Fatalf("sled %+v: want toggle %d, target %#x, len %d", sl, tt.toggle, s.Taken, s.Len)
			}
			if !bytes.Equal(sl.Off[sl.Toggle:], sl.On[sl.Toggle:]) || bytes.Equal(sl.Off[:sl.Toggle], sl.On[:sl.Toggle]) {
				t.Fatalf("Off % x and On % x must differ exactly in [0, %d)", sl.Off, sl.On, sl.Toggle)
			}
			jump, nop := sl.Off, sl.On
			if tt.op == x86asm.JNE {
				jump, nop = sl.On, sl.Off
			}
			if !bytes.Equal(sl.Jump(), jump) {
				t.Errorf("Jump() = % x, want % x", sl.Jump(), jump)
			}
			for _, form := range []struct {
				b       []byte
				jumping bool
			}{{jump, true}, {nop, false}} {
				ins := decodeAll(t, form.b, s.Addr)
				first := ins[0]
				if first.Len != sl.Toggle {
					t.Errorf("% x: first instruction %v is %d bytes, toggle %d", form.b, first.Inst, first.Len, sl.Toggle)
				}
				if form.jumping && (first.Op != x86asm.JMP || first.Target != s.Taken) {
					t.Errorf("% x: first instruction %v (target %#x), want JMP %#x", form.b, first.Inst, first.Target, s.Taken)
				}
				if !form.jumping && first.Op != x86asm.NOP {
					t.Errorf("% x: first instruction %v, want NOP", form.b, first.Inst)
				}
				for _, in := range ins[1:] {
					if in.Op != x86asm.NOP {
						t.Errorf("% x: %v after the toggle", form.b, in.Inst)
					}
				}
				// Re-read it, followed by code that is not a 9-byte NOP.
				code := append(append([]byte{}, form.b...), 0x90, 0x48, 0x89, 0x4c, 0x24, 0x20)
				target, jumping, n, err := ParseSled(Bytes{Base: s.Addr, Code: code}, s.Addr)
				if err != nil {
					t.Fatalf("ParseSled(% x): %v", form.b, err)
				}
				wantTarget := uint64(0)
				if form.jumping {
					wantTarget = s.Taken
				}
				if target != wantTarget || jumping != form.jumping || n != s.Len {
					t.Errorf("ParseSled(% x) = %#x, %v, %d; want %#x, %v, %d", form.b, target, jumping, n, wantTarget, form.jumping, s.Len)
				}
			}
		})
	}
}

func TestParseSledRejects(t *testing.T) {
	for _, code := range [][]byte{
		{0x80, 0x3D, 0, 0, 0, 0, 0, 0x74, 0x10}, // the unconverted site
		{0xEB, 0x10, 0x90},                      // too short a sled
		{0x90, 0x90},
		nil,
	} {
		if _, _, _, err := ParseSled(Bytes{Base: 0x1000, Code: code}, 0x1000); err == nil {
			t.Errorf("ParseSled(% x) succeeded", code)
		}
	}
}

func TestAtomicStore(t *testing.T) {
	for _, tt := range []struct {
		addr uint64
		n    int
		want bool
	}{{0x1000, 2, true}, {0x1006, 2, true}, {0x1007, 2, false}, {0x1003, 5, true}, {0x1004, 5, false}, {0x1000, 8, true}, {0x1001, 8, false}, {0x1000, 9, false}} {
		if got := AtomicStore(tt.addr, tt.n); got != tt.want {
			t.Errorf("AtomicStore(%#x, %d) = %v, want %v", tt.addr, tt.n, got, tt.want)
		}
	}
}

// TestGolden keeps the sled shapes in testdata/sleds.golden (hex | asm).
// Regenerate with: go test -run TestGolden -update
func TestGolden(t *testing.T) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Canonical sleds at %#x: name, form, hex | Go assembler syntax.\n", sledAddr)
	fmt.Fprintf(&buf, "# Regenerate with: go test -run TestGolden -update\n")
	for _, tt := range sledCases {
		if tt.toggle == 0 {
			continue
		}
		s := Site{Addr: sledAddr, Len: tt.len, Op: tt.op, Taken: sledAddr + 2 + uint64(tt.rel), Next: sledAddr + uint64(tt.len)}
		sl, err := Canonical(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range []struct {
			name string
			b    []byte
		}{{"off", sl.Off}, {"on ", sl.On}} {
			var asm []string
			for _, in := range decodeAll(t, form.b, s.Addr) {
				asm = append(asm, x86asm.GoSyntax(in.Inst, in.PC, nil))
			}
			fmt.Fprintf(&buf, "%-20s %s %-44s | %s\n", tt.name, form.name, hex.EncodeToString(form.b), strings.Join(asm, "; "))
		}
	}
	path := filepath.Join("testdata", "sleds.golden")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("sled shapes differ from %s (go test -run TestGolden -update to accept):\ngot:\n%s\nwant:\n%s", path, buf.Bytes(), want)
	}
}
