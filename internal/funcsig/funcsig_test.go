package funcsig

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/arch/amd64"
	"github.com/gosdt/gosdt/arch/arm64"
	"github.com/gosdt/gosdt/internal/testbin"
)

const store = "example.com/app/store."

// want is each test function's signature as abi-internal.md assigns it, written by
// hand: "name type kind registers", registers as In (integer register n) or Fn
// (floating-point) with the bytes used, or "stack". Where the architectures differ
// (amd64 has 9 integer and 15 floating-point registers, arm64 16 and 16) the entry of
// wantArch wins.
var want = map[string]struct{ params, results []string }{
	"(*DB).Get": {
		[]string{"d *example.com/app/store.DB pointer I0:8", "key string string I1:8 I2:8"},
		[]string{"r0 []uint8 slice I0:8 I1:8 I2:8", "r1 error error I3:8 I4:8"},
	},
	"DB.Len": { // a value receiver: a struct of one int
		[]string{"d example.com/app/store.DB other I0:8", "extra uint16 uint I1:2"},
		[]string{"r0 int int I0:8"},
	},
	"Narrow": {
		[]string{"a int8 int I0:1", "b int16 int I1:2", "c int32 int I2:4", "d int64 int I3:8", "e uint uint I4:8", "f uint8 uint I5:1"},
		[]string{"r0 int32 int I0:4"},
	},
	"Floats": {
		[]string{"a float32 float F0:4", "b float64 float F1:8", "n int int I0:8"},
		[]string{"r0 float64 float F0:8", "r1 float32 float F1:4"},
	},
	"Flag": {
		[]string{"b bool bool I0:1", "s string string I1:8 I2:8"},
		[]string{"r0 bool bool I0:1"},
	},
	"Bytes": {
		[]string{"b []uint8 slice I0:8 I1:8 I2:8", "p *int pointer I3:8"},
		[]string{"r0 []uint8 slice I0:8 I1:8 I2:8"},
	},
	"Ifaces": {
		[]string{"x interface {} interface I0:8 I1:8", "e error error I2:8 I3:8", "s fmt.Stringer interface I4:8 I5:8"},
		[]string{"r0 interface {} interface I0:8 I1:8", "r1 error error I2:8 I3:8"},
	},
	"Structs": { // Small's fields one by one; Big needs ten integer registers, amd64 has nine
		[]string{"s example.com/app/store.Small other I0:4 F0:8 I1:1", "b example.com/app/store.Big other stack", "p *example.com/app/store.Big pointer I2:8"},
		[]string{"r example.com/app/store.Small other I0:4 F0:8 I1:1", "err error error I2:8 I3:8"},
	},
	"Arrays": { // [1]int is its element; [2]int goes on the stack
		[]string{"a [1]int other I0:8", "b [2]int other stack", "c int int I1:8"},
		[]string{"r0 int int I0:8"},
	},
	"Mixed": { // Pair{[1]int, [0]int, float32}; a complex is two floats
		[]string{"p example.com/app/store.Pair other I0:8 F0:4", "c complex128 other F1:8 F2:8", "u uintptr uint I1:8"},
		[]string{"r0 example.com/app/store.Pair other I0:8 F0:4", "r1 complex128 other F1:8 F2:8"},
	},
	"Div": { // named results
		[]string{"a int int I0:8", "b int int I1:8"},
		[]string{"q int int I0:8", "r int int I1:8"},
	},
	"Spill": {
		[]string{"a int int I0:8", "b int int I1:8", "c int int I2:8", "d int int I3:8", "e int int I4:8", "f int int I5:8", "g int int I6:8", "h int int I7:8",
			"s string string I8:8 I9:8", "z int int I10:8"},
		[]string{"r0 int int I0:8"},
	},
	"ManyFloats": {
		[]string{"a float64 float F0:8", "b float64 float F1:8", "c float64 float F2:8", "d float64 float F3:8", "e float64 float F4:8", "f float64 float F5:8", "g float64 float F6:8", "h float64 float F7:8",
			"i float64 float F8:8", "j float64 float F9:8", "k float64 float F10:8", "l float64 float F11:8", "m float64 float F12:8", "n float64 float F13:8", "o float64 float F14:8",
			"p float64 float F15:8", "q int int I0:8"},
		[]string{"r0 float64 float F0:8"},
	},
	"MakeAdder": {
		[]string{"n int int I0:8"},
		[]string{"r0 func(int, string) int pointer I0:8"},
	},
	"MakeAdder.func1": { // the closure: its context register is no argument
		[]string{"a int int I0:8", "s string string I1:8 I2:8"},
		[]string{"r0 int int I0:8"},
	},
	// Generic functions, once per shape, take a dictionary pointer first, after the
	// receiver of a method; a closure inside one reaches it through its context.
	"Sum[go.shape.int]": {
		[]string{".dict *uintptr pointer I0:8", "xs []go.shape.int slice I1:8 I2:8 I3:8", "scale go.shape.int int I4:8"},
		[]string{"r0 go.shape.int int I0:8"},
	},
	"Sum[go.shape.float64]": {
		[]string{".dict *uintptr pointer I0:8", "xs []go.shape.float64 slice I1:8 I2:8 I3:8", "scale go.shape.float64 float F0:8"},
		[]string{"r0 go.shape.float64 float F0:8"},
	},
	"(*Box[go.shape.string]).Put": {
		[]string{"b *example.com/app/store.Box[go.shape.string] pointer I0:8", ".dict *uintptr pointer I1:8", "v go.shape.string string I2:8 I3:8", "n int int I4:8"},
		[]string{"r0 int int I0:8"},
	},
	"Each[go.shape.string].func1": {
		[]string{"i int int I0:8"},
		[]string{"r0 int int I0:8"},
	},
	"Call": {
		[]string{"f func() error pointer I0:8", "m map[string]int pointer I1:8", "ch chan int pointer I2:8"},
		[]string{"r0 int int I0:8"},
	},
}

// wantArch overrides want where amd64's fewer registers run out.
var wantArch = map[string]map[string][]string{
	"amd64": {
		// s: two words, one register left, which it gives back: z takes it.
		"Spill.params.8": {"s string string stack"},
		"Spill.params.9": {"z int int I8:8"},
		// The sixteenth float.
		"ManyFloats.params.15": {"p float64 float stack"},
	},
	"arm64": {
		// Big's ten words fit in arm64's sixteen integer registers.
		"Structs.params.1": {"b example.com/app/store.Big other I2:8 I3:8 I4:8 I5:8 I6:8 I7:8 I8:8 I9:8 I10:8 I11:8"},
		"Structs.params.2": {"p *example.com/app/store.Big pointer I12:8"},
	},
}

// expected returns the hand-written signature of function fn on goarch.
func expected(goarch, fn string) (params, results []string) {
	w := want[fn]
	params, results = append([]string(nil), w.params...), append([]string(nil), w.results...)
	o := wantArch[goarch]
	for i := range params {
		if v, ok := o[fmt.Sprintf("%s.params.%d", fn, i)]; ok {
			params[i] = v[0]
		}
	}
	return params, results
}

// describe writes a value as the table does.
func describe(v Value) string {
	s := v.Name + " " + v.Type + " " + string(v.Kind)
	if v.OnStack {
		return s + " stack"
	}
	for _, w := range v.Words {
		c := "I"
		if w.Float {
			c = "F"
		}
		s += fmt.Sprintf(" %s%d:%d", c, w.Reg, w.Size)
	}
	return s
}

// app builds testdata/app for goarch (the go command's cache makes it quick).
func app(t *testing.T, goarch string, flags ...string) string {
	t.Helper()
	return testbin.Build(t, "testdata/app", goarch, ".", flags...)
}

func TestSignatures(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			f, err := Open(app(t, goarch))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Arch() != goarch {
				t.Errorf("Arch() = %s", f.Arch())
			}
			for fn := range want {
				sig, err := f.Func(store + fn)
				if err != nil {
					t.Error(err)
					continue
				}
				wp, wr := expected(goarch, fn)
				var gp, gr []string
				for _, v := range sig.Params {
					gp = append(gp, describe(v))
				}
				for _, v := range sig.Results {
					gr = append(gr, describe(v))
				}
				if strings.Join(gp, "\n") != strings.Join(wp, "\n") || strings.Join(gr, "\n") != strings.Join(wr, "\n") {
					t.Errorf("%s:\n got  %q -> %q\n want %q -> %q", fn, gp, gr, wp, wr)
				}
			}
		})
	}
}

// TestSpillsMatchCode checks Spills against the morestack block the compiler wrote
// for each function, as package arch reads it for fprobe (register, width, slot).
func TestSpillsMatchCode(t *testing.T) {
	readers := map[string]arch.FuncProbes{"amd64": amd64.FuncProbes, "arm64": arm64.FuncProbes}
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			path := app(t, goarch)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			code := readCode(t, path)
			for fn := range want {
				sig, err := f.Func(store + fn)
				if err != nil {
					t.Fatal(err)
				}
				sym := code.syms[store+fn]
				fp := readers[goarch]
				w, err := fp.Walk(code.mem, sym.Value, sym.Value+sym.Size)
				if err != nil {
					t.Fatalf("%s: %v", fn, err)
				}
				e, err := fp.FuncEntry(code.mem, w, code.name)
				if err != nil {
					t.Fatalf("%s: %v", fn, err)
				}
				got := append([]arch.Spill(nil), e.Spills...)
				sort.Slice(got, func(i, j int) bool { return got[i].Off < got[j].Off })
				if fmt.Sprint(got) != fmt.Sprint(sig.Spills()) {
					t.Errorf("%s: the code spills %v, the signature says %v", fn, got, sig.Spills())
				}
			}
		})
	}
}

// code is an executable's text and function symbols.
type code struct {
	mem  arch.Bytes
	syms map[string]elf.Symbol
	byPC map[uint64]string
}

func (c *code) name(pc uint64) string { return c.byPC[pc] }

func readCode(t *testing.T, path string) *code {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	b, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	c := &code{mem: arch.Bytes{Base: text.Addr, Code: b}, syms: map[string]elf.Symbol{}, byPC: map[uint64]string{}}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			c.syms[s.Name], c.byPC[s.Value] = s, s.Name
		}
	}
	return c
}

func TestNoDWARF(t *testing.T) {
	_, err := Open(app(t, "amd64", "-ldflags=-s -w"))
	if !errors.Is(err, ErrNoDWARF) {
		t.Fatalf("Open of a binary built with -s -w: %v, want ErrNoDWARF", err)
	}
}

func TestNotFound(t *testing.T) {
	f, err := Open(app(t, "amd64"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Func(store + "NoSuch"); err == nil || !strings.Contains(err.Error(), "no function") {
		t.Errorf("Func of a missing function: %v", err)
	}
	// errors.New is inlined into every caller in the test program, yet described.
	if _, err := f.Func("errors.New"); err == nil || !strings.Contains(err.Error(), "inlined into every caller") {
		t.Errorf("Func of an inlined-only function: %v", err)
	}
}

// TestSpillsMatchEveryFunction holds the signature of every function of the test
// program (the runtime, fmt, errors, reflect... compiled as the go command does) that
// has a morestack block against that block, on both architectures.
func TestSpillsMatchEveryFunction(t *testing.T) {
	readers := map[string]arch.FuncProbes{"amd64": amd64.FuncProbes, "arm64": arm64.FuncProbes}
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			path := app(t, goarch)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			c := readCode(t, path)
			fp := readers[goarch]
			checked := 0
			for name, sym := range c.syms {
				w, err := fp.Walk(c.mem, sym.Value, sym.Value+sym.Size)
				if err != nil {
					continue
				}
				e, err := fp.FuncEntry(c.mem, w, c.name)
				if err != nil || len(e.Spills) == 0 {
					continue // no morestack block, or one that spills nothing: nothing to hold against
				}
				sig, err := f.Func(name)
				if err != nil {
					continue // assembly, wrappers: no DWARF
				}
				got := append([]arch.Spill(nil), e.Spills...)
				sort.Slice(got, func(i, j int) bool { return got[i].Off < got[j].Off })
				if fmt.Sprint(got) != fmt.Sprint(sig.Spills()) {
					t.Errorf("%s: the code spills %v, the signature says %v", sig, got, sig.Spills())
				}
				checked++
			}
			if checked < 500 {
				t.Errorf("only %d functions checked", checked)
			}
			t.Logf("%d functions' spill blocks match their signatures", checked)
		})
	}
}
