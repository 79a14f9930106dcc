package arm64

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/bits"
	"reflect"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
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
		x := xdecode(in.Word, in.PC)
		if got := x.Inst.String(); !in.Known() || x.Bad || got != code[i].asm {
			t.Fatalf("%#08x decodes to %q (known %v, bad %v), want %q", code[i].w, got, in.Known(), x.Bad, code[i].asm)
		}
	}
	return insts
}

type a64Word struct {
	w   uint32
	asm string
}

// TestTrack covers the forms track follows, including those no Define in the
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
		track(in, &r)
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

// Fixes of xcalls: where the arm64asm implementation differs from calls.
const (
	// fixReadOnly: an instruction forgets only the registers it writes; xcalls forgot
	// every register arm64asm names, except a store's (CMP X1, X2 forgot both, so
	// did CBZ X1, INS V0.S[1], W3 and STXR's source): over-cautious, not unsound.
	fixReadOnly = 1 << iota
	// fixUnknown: a word arm64asm decodes and the decoder does not know forgets every
	// register (what it writes is not known), as a word neither decodes did.
	fixUnknown
	fixAll = fixReadOnly | fixUnknown
)

var fixNames = map[int]string{fixReadOnly: "read, not written", fixUnknown: "not known to the decoder"}

// callBinaries are the binaries the Calls differential reads: gofmt built for arm64
// (or this test binary, the go command and the compiler where the machine is arm64);
// natively also sdt's test binary, with a hundred probe definitions.
func callBinaries(t *testing.T) []*testbin.Binary {
	bins := testbin.Binaries(t, &Arch)
	if testing.Short() || testutil.Emulated() {
		return bins
	}
	return append(bins, testbin.Read(t, testbin.BuildTest(t, "arm64", "../../sdt"), Arch.Machine))
}

// TestCallsAgainstOracle compares calls with xcalls on every function of real
// binaries, with every direct call wanted: exactly what the oracle returns with its
// differences fixed (fixAll). Against the oracle as it was, every difference must be
// an argument one of the two knows and the other does not, which one fix alone
// explains, and the calls to sdt's Define (what Definitions reads) must not differ.
func TestCallsAgainstOracle(t *testing.T) {
	for _, b := range callBinaries(t) {
		d := callsDiffer{t: t, text: b.Text, names: map[uint64]string{}, diffs: map[string]int{}}
		for _, fn := range b.Funcs {
			d.names[fn.Entry] = fn.Name
		}
		for _, fn := range b.Funcs {
			d.function(fn.Name, fn.Entry, fn.End)
		}
		t.Logf("%s: %d functions with calls, %d calls, %d arguments known (the oracle as it was: %d), %d calls to Define",
			b.Path, d.funcs, d.calls, d.known, d.oldKnown, d.defines)
		if len(d.diffs) > 0 {
			t.Logf("  arguments that differ from the oracle as it was: %s", top(d.diffs, 8))
		}
	}
}

// callsDiffer compares calls with the oracle, function by function, and counts.
type callsDiffer struct {
	t                                            *testing.T
	text                                         arch.Bytes
	names                                        map[uint64]string
	funcs, calls, known, oldKnown, defines, fail int
	diffs                                        map[string]int // against the oracle as it was, by reason
}

func (d *callsDiffer) function(name string, entry, end uint64) {
	all := func(uint64) bool { return true }
	got := calls(d.text, entry, end, all, nil)
	if want := xcalls(d.text, entry, end, all, fixAll); !reflect.DeepEqual(got, want) {
		if d.fail++; d.fail <= 10 {
			d.t.Errorf("%s: calls %s; the fixed oracle %s", name, callsDiff(got, want), callsDiff(want, got))
		}
		return
	}
	if len(got) > 0 {
		d.funcs++
	}
	d.calls += len(got)
	old := xcalls(d.text, entry, end, all, 0)
	var byFix map[int][]arch.Call // the oracle with one fix, made when first asked
	for i, c := range got {
		o := old[i]
		d.known += bits.OnesCount64(c.Known)
		d.oldKnown += bits.OnesCount64(o.Known)
		if o.PC != c.PC || o.Target != c.Target || o.Stored != c.Stored {
			d.t.Errorf("%s: call %#x to %#x stored %#x; the oracle %#x to %#x stored %#x", name, c.PC, c.Target, c.Stored, o.PC, o.Target, o.Stored)
			continue
		}
		isDefine := strings.HasPrefix(d.names[c.Target], "github.com/gosdt/gosdt/sdt.Define")
		if isDefine {
			d.defines++
		}
		for j := range abiRegs {
			v, ok := c.Arg(j)
			ov, ook := o.Arg(j)
			switch {
			case ok == ook && v == ov:
				continue
			case isDefine:
				d.t.Errorf("%s: call %#x to %s: x%d %#x (%v); the oracle %#x (%v)", name, c.PC, d.names[c.Target], j, v, ok, ov, ook)
			case ok && ook:
				d.t.Errorf("%s: call %#x: x%d is %#x, the oracle says %#x", name, c.PC, j, v, ov)
				continue
			}
			if byFix == nil {
				byFix = map[int][]arch.Call{}
				for f := range fixNames {
					byFix[f] = xcalls(d.text, entry, end, all, f)
				}
			}
			why := ""
			for _, f := range []int{fixReadOnly, fixUnknown} {
				if fv, fok := byFix[f][i].Arg(j); fok == ok && fv == v {
					why = fixNames[f]
					break
				}
			}
			if why == "" {
				d.t.Errorf("%s: call %#x: x%d %#x (%v); the oracle %#x: no single fix explains it", name, c.PC, j, v, ok, ov)
				why = "no single fix"
			}
			if ok {
				d.diffs["calls knows, the oracle did not: "+why]++
			} else {
				d.diffs["the oracle knew, calls does not: "+why]++
			}
		}
	}
}

// callsDiff prints the calls of a that b does not have, field by field.
func callsDiff(a, b []arch.Call) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%d calls", len(a))
	for i := range a {
		if i >= len(b) || !reflect.DeepEqual(a[i], b[i]) {
			fmt.Fprintf(&s, "; %+v", a[i])
		}
	}
	return s.String()
}
