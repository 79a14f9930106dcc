package amd64

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/x86/x86asm"
)

var update = flag.Bool("update", false, "rewrite testdata/sleds.golden and vextab.go")

// decodeAll decodes b at pc into instructions that must end exactly at len(b).
func decodeAll(t *testing.T, b []byte, pc uint64) []xinst {
	t.Helper()
	var out []xinst
	for off := 0; off < len(b); {
		in, err := xdecode(b[off:], pc+uint64(off))
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

// encodeJMP is the shortest JMP at from to to, as canonical picks it.
func encodeJMP(from, to uint64) ([]byte, error) {
	if fitsRel8(from, to) {
		return encodeJMP8(from, to), nil
	}
	return encodeJMP32(from, to)
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
			b, err := encodeJMP(from, tt.to)
			if tt.len == 0 {
				if err == nil {
					t.Fatalf("encodeJMP(%#x, %#x) = % x, want range error", from, tt.to, b)
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
		b := nop(n)
		if len(b) != n {
			t.Fatalf("nop(%d) is %d bytes", n, len(b))
		}
		ins := decodeAll(t, b, 0x1000)
		if want := (n + maxNOP - 1) / maxNOP; len(ins) != want {
			t.Errorf("nop(%d) = %d instructions, want %d", n, len(ins), want)
		}
		for i, in := range ins {
			if in.Op != x86asm.NOP {
				t.Errorf("nop(%d) xinst %d is %v", n, i, in.Inst)
			}
			if i > 0 && in.Len != maxNOP {
				t.Errorf("nop(%d) xinst %d has length %d: only the first may be short", n, i, in.Len)
			}
		}
	}
	for i, b := range nops {
		if ins := decodeAll(t, b, 0); len(ins) != 1 || ins[0].Op != x86asm.NOP || ins[0].Len != i+1 {
			t.Errorf("nops[%d] = % x decodes as %v", i, b, ins)
		}
	}
}

// sledCases are the site shapes of the table and golden tests. Taken is given
// relative to Addr+2 (the end of a rel8 toggle at the site's first byte); whether
// the toggle is 2 or 5 bytes then depends on where the lead puts it.
var sledCases = []struct {
	name string
	op   x86asm.Op
	len  int
	rel  int64 // Taken - (Addr+2)
	ok   bool  // false: canonical must fail
}{
	{"JE rel8 fwd", x86asm.JE, 9, 0x30, true},
	{"JE rel8 fwd +127", x86asm.JE, 9, 127, true},
	{"JE rel8 fwd +128", x86asm.JE, 9, 128, true},
	{"JE rel8 back -128", x86asm.JE, 9, -128, true},
	{"JE rel8 back -127", x86asm.JE, 9, -127, true},
	{"JE rel8 back -129", x86asm.JE, 9, -129, true},
	{"JE rel8 loop back", x86asm.JE, 9, -0x16, true},
	{"JE pad3 rel8", x86asm.JE, 12, 0x20, true},
	{"JE pad2 rel8", x86asm.JE, 11, 0x20, true},
	{"JE rel32 fwd far", x86asm.JE, 13, 0x1234, true},
	{"JE rel32 back far", x86asm.JE, 13, -0x1234, true},
	{"JE rel32 near back", x86asm.JE, 13, -0x20, true},
	{"JE pad3 rel32", x86asm.JE, 16, 0x400, true},
	{"JE pad7 rel32", x86asm.JE, 20, -0x400, true},
	{"JE pad9 rel32", x86asm.JE, 22, 0x400, true},
	{"JNE rel8 fwd", x86asm.JNE, 9, 0x40, true},
	{"JNE rel8 -128", x86asm.JNE, 9, -128, true},
	{"JNE rel32 fwd", x86asm.JNE, 13, 0x800, true},
	{"JNE rel32 back", x86asm.JNE, 13, -0x800, true},
	{"JE too far", x86asm.JE, 13, 1 << 33, false},
	{"JE too short", x86asm.JE, 8, 0x10, false},
	{"JB not a site", x86asm.JB, 9, 0x10, false},
}

const sledAddr = uint64(0x47a766)

// TestCanonical checks every case at every address modulo 8: the forms differ in one
// byte, decode to the same instruction boundaries, the JMP form goes where the branch
// went, the other form goes to the end of the site or falls through without touching
// anything but the flags, and the disabled form of a JE site is one instruction; the
// enabled form of a JE site runs a probe NOP (probeTail) where there is room.
func TestCanonical(t *testing.T) {
	for _, tt := range sledCases {
		for mod := range uint64(8) {
			addr := sledAddr&^7 + mod
			t.Run(fmt.Sprintf("%s/addr%%8=%d", tt.name, mod), func(t *testing.T) {
				checkCanonical(t, addr, tt.op, tt.len, addr+2+uint64(tt.rel), tt.ok)
			})
		}
		// Near a page's end, where the probe NOP moves or has no room.
		for addr := uint64(0x47aff0); addr < 0x47b000; addr++ {
			checkCanonical(t, addr, tt.op, tt.len, addr+2+uint64(tt.rel), tt.ok)
		}
	}
}

func checkCanonical(t *testing.T, addr uint64, op x86asm.Op, n int, taken uint64, ok bool) {
	t.Helper()
	s := arch.Site{Addr: addr, Len: n, Taken: taken, OnZero: op == x86asm.JE, Branch: op.String()}
	sl, err := canonical(s)
	if !ok {
		if err == nil {
			t.Fatalf("canonical = %+v, want error", sl)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if sl.Target != s.Taken || len(sl.Off) != s.Len || len(sl.On) != s.Len {
		t.Fatalf("sled %+v: want target %#x, len %d", sl, s.Taken, s.Len)
	}
	rel8 := fitsRel8(addr, taken)
	if wantAt := map[bool]int{true: 1, false: 0}[rel8]; sl.Toggle != 1 || sl.At != wantAt {
		t.Fatalf("toggle [%d, +%d), want one byte at %d", sl.At, sl.Toggle, wantAt)
	}
	end := sl.At + sl.Toggle
	if !bytes.Equal(sl.Off[:sl.At], sl.On[:sl.At]) || !bytes.Equal(sl.Off[end:], sl.On[end:]) || bytes.Equal(sl.Off[sl.At:end], sl.On[sl.At:end]) {
		t.Fatalf("Off % x and On % x must differ exactly in [%d, %d)", sl.Off, sl.On, sl.At, end)
	}
	jump, other := sl.Off, sl.On
	if op == x86asm.JNE {
		jump, other = sl.On, sl.Off
	}
	if got := jumps(sl.Off); got != (op == x86asm.JE || rel8) {
		t.Errorf("jumps(Off) = %v for %v", got, op)
	}
	// A JE site's enabled form runs a 5-byte NOP that stays in one page just before
	// the fire block (the kernel's fast uprobe path applies there), wherever its sled
	// has room for one; a JNE site's fire block is elsewhere, and its sled has none.
	probe := probeNOP(sl.On, addr)
	next := addr + uint64(n) // where the rel8 form that does not jump to Taken goes
	switch first := map[bool]int{true: 2, false: 5}[rel8]; {
	case op == x86asm.JNE && probe >= 0:
		t.Errorf("JNE sled % x has a probe NOP at +%d", sl.On, probe)
	case probe >= 0:
		at := addr + uint64(probe)
		if !bytes.Equal(sl.On[probe:probe+5], nop5) || at/4096 != (at+4)/4096 || probe < first {
			t.Errorf("probe NOP at +%d of % x: not a 5-byte NOP in one page after the toggle", probe, sl.On)
		}
		next = at
	case op == x86asm.JE:
		for o := first; o+5 <= n; o++ {
			if at := addr + uint64(o); at/4096 == (at+4)/4096 {
				t.Errorf("JE sled % x has no probe NOP, but +%d could hold one", sl.On, o)
				break
			}
		}
	}
	if !uprobed(sl.On, sl.On) || !uprobed(sl.Off, sl.Off) {
		t.Error("a sled is not uprobed-equal to itself")
	}
	if probe >= 0 {
		for _, b := range []byte{0xCC, 0xE8} {
			text := slices.Clone(sl.Off)
			text[probe] = b
			if !uprobed(sl.Off, text) {
				t.Errorf("% x with %#x in its probe NOP: not read as uprobed", sl.Off, b)
			}
		}
	}
	if text := slices.Clone(sl.Off); true {
		text[sl.At] ^= 0x40
		if uprobed(sl.Off, text) {
			t.Errorf("% x with its toggle changed: read as uprobed", sl.Off)
		}
	}
	var bounds [2][]uint64
	for i, form := range []struct {
		b       []byte
		jumping bool
	}{{jump, true}, {other, false}} {
		ins := decodeAll(t, form.b, s.Addr)
		first := ins[0]
		if wantLen := map[bool]int{true: 2, false: 5}[rel8]; first.Len != wantLen {
			t.Errorf("% x: first instruction %v is %d bytes, want %d", form.b, first.Inst, first.Len, wantLen)
		}
		switch {
		case form.jumping && (first.Op != x86asm.JMP || first.Target != s.Taken):
			t.Errorf("% x: %v (target %#x), want JMP %#x", form.b, first.Inst, first.Target, s.Taken)
		case !form.jumping && rel8 && (first.Op != x86asm.JMP || first.Target != next):
			t.Errorf("% x: %v (target %#x), want JMP to the probe NOP or the site's end %#x", form.b, first.Inst, first.Target, next)
		case !form.jumping && !rel8 && (first.Op != x86asm.TEST || first.Inst.Args[0] != x86asm.EAX):
			t.Errorf("% x: %v, want TEST EAX, imm32", form.b, first.Inst)
		}
		for _, in := range ins[1:] {
			if in.Op != x86asm.NOP {
				t.Errorf("% x: %v after the toggle", form.b, in.Inst)
			}
		}
		for _, in := range ins {
			bounds[i] = append(bounds[i], in.PC)
		}
	}
	if !slices.Equal(bounds[0], bounds[1]) {
		t.Errorf("instruction boundaries differ between the forms: %#x and %#x", bounds[0], bounds[1])
	}
}

// FuzzCanonical checks the same properties for any site address, length and target.
func FuzzCanonical(f *testing.F) {
	f.Add(uint64(0x47a767), uint8(9), int64(-129), false)
	f.Add(uint64(0x47a764), uint8(13), int64(0x1234), true)
	f.Fuzz(func(t *testing.T, addr uint64, n uint8, rel int64, jne bool) {
		addr = addr%(1<<40) + 1<<20
		n = minSiteLen + n%24
		rel %= 1 << 31
		op := x86asm.JE
		if jne {
			op = x86asm.JNE
		}
		taken := addr + 2 + uint64(rel)
		// A branch into the site or to its end has no two ways to switch: refused.
		inside := taken >= addr && taken <= addr+uint64(n)
		checkCanonical(t, addr, op, int(n), taken, !inside && fitsRel32(addr, taken))
	})
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
	fmt.Fprintf(&buf, "# Canonical sleds at the addresses given: name, address, form, hex | Go assembler syntax.\n")
	fmt.Fprintf(&buf, "# Regenerate with: go test -run TestGolden -update\n")
	for _, mod := range []uint64{0, 4, 6, 7} {
		addr := sledAddr&^7 + mod
		for _, tt := range sledCases {
			if !tt.ok {
				continue
			}
			s := arch.Site{Addr: addr, Len: tt.len, Taken: addr + 2 + uint64(tt.rel), OnZero: tt.op == x86asm.JE, Branch: tt.op.String()}
			sl, err := canonical(s)
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
				fmt.Fprintf(&buf, "%-20s %#x %s %-44s | %s\n", tt.name, addr, form.name, hex.EncodeToString(form.b), strings.Join(asm, "; "))
			}
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
