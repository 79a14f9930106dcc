package fprobe

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// TestManyArgs: a function with more register arguments than the stubs' first step
// keeps (they keep the layout's registers in steps) sees each argument whole, with its
// entry probe delivered (the spill and the hook), counted only (the fast path alone)
// and with its return folded; the hook sees each word as passed.
func TestManyArgs(t *testing.T) {
	f := lookup(t, "Many")
	ints := []int{1, -2, 3, -4, 5, -6, 7, -8, 9, -10}
	floats := []float64{0.5, -1.25, 2.5, -3.75, 1e10, -1e-10}
	want := 0.0
	for i, v := range ints {
		want += float64((i + 1) * v)
	}
	for i, v := range floats {
		want += float64(i+1) * v
	}
	callMany := func() float64 {
		return target.Many(ints[0], ints[1], ints[2], ints[3], ints[4], ints[5], ints[6], ints[7], ints[8], ints[9],
			floats[0], floats[1], floats[2], floats[3], floats[4], floats[5])
	}
	var words []uint64
	var floatWord []bool
	hook := func(_ *Func, a *Args) {
		words, floatWord = words[:0], floatWord[:0]
		for i := range a.Words() {
			words = append(words, a.Word(i))
			floatWord = append(floatWord, a.IsFloat(i))
		}
	}
	if err := Set([]Change{{Func: f, Entry: hook, Return: true}}); err != nil {
		t.Fatal(err)
	}
	defer Set([]Change{{Func: f}})
	for _, mode := range []struct {
		name         string
		quiet, rquit bool
	}{{"delivered", false, false}, {"counted", true, false}, {"folded", true, true}} {
		f.SetQuiet(mode.quiet)
		f.SetReturnQuiet(mode.rquit)
		words = nil
		for range 100 {
			if got := callMany(); got != want {
				t.Fatalf("%s: Many returned %v, want %v", mode.name, got, want)
			}
		}
		if mode.quiet {
			if words != nil {
				t.Errorf("%s: the hook ran", mode.name)
			}
			continue
		}
		// The words in the ABI's order: the integers in registers, then the floats.
		intRegs := 9
		if runtime.GOARCH == "arm64" {
			intRegs = 16
		}
		var exp []uint64
		for _, v := range ints[:min(len(ints), intRegs)] {
			exp = append(exp, uint64(v))
		}
		for _, v := range floats {
			exp = append(exp, math.Float64bits(v))
		}
		if fmt.Sprintf("%#x", words) != fmt.Sprintf("%#x", exp) {
			t.Errorf("%s: words %#x, want %#x", mode.name, words, exp)
		}
	}
	f.SetQuiet(false)
	f.SetReturnQuiet(false)
	buf := make([]Return, ringSize)
	for f.ReadReturns(buf) > 0 {
	}
}
