package fprobe

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/funcsig"
	"github.com/gosdt/gosdt/internal/testbin"
)

// TestCheckLayout holds the signatures the test binary's DWARF gives (package funcsig,
// as sdtctl reads them) against the functions' code: each matches itself, and a
// signature of another function, or changed by one width, is refused.
func TestCheckLayout(t *testing.T) {
	lookup(t, "Small") // skips where there are no function probes
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file, err := funcsig.Open(exe)
	if errors.Is(err, funcsig.ErrNoDWARF) {
		// go test links the binary it runs without DWARF: read a copy built with it,
		// compiled alike.
		file, err = funcsig.Open(testbin.BuildTest(t, runtime.GOARCH, "."))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sig := func(name string) []arch.Spill {
		s, err := file.Func(pkg + name)
		if err != nil {
			t.Fatal(err)
		}
		return s.Spills()
	}
	names := []string{"Small", "Large", "Narrow", "Floats", "Check", "Sum", "Apply", "Deep", "Adder", "Wait"}
	for _, name := range names {
		if err := lookup(t, name).CheckLayout(sig(name)); err != nil {
			t.Errorf("%s against its own signature: %v", name, err)
		}
	}
	// Narrow(int8, uint16, int32, bool, float32) and Large(*int, bool, float64).
	if err := lookup(t, "Narrow").CheckLayout(sig("Large")); err == nil {
		t.Error("Narrow accepted Large's signature")
	}
	w := sig("Narrow")
	w[1].Size = 8
	if err := lookup(t, "Narrow").CheckLayout(w); err == nil || !strings.Contains(err.Error(), "word 1") {
		t.Errorf("Narrow with its second word widened: %v", err)
	}
	if err := lookup(t, "Small").CheckLayout(sig("Small")[:2]); err == nil {
		t.Error("Small accepted a signature a word short")
	}
}
