package funcsig

import (
	"os"
	"runtime"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
)

// bigProgram builds cmd/compile, a program of about 30 MB with its DWARF and tens of
// thousands of functions (the toolchain's own copy has no DWARF).
func bigProgram(b *testing.B) string {
	b.Helper()
	return testbin.Build(b, "", runtime.GOARCH, "cmd/compile")
}

// BenchmarkOpen measures Open of a large program: reading the ELF file and one pass
// over its DWARF that maps every function to its entry.
func BenchmarkOpen(b *testing.B) {
	path := bigProgram(b)
	if st, err := os.Stat(path); err == nil {
		b.SetBytes(st.Size())
	}
	var n int
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n = f.Len()
		f.Close()
	}
	b.ReportMetric(float64(n), "funcs")
}

// BenchmarkFunc measures reading one signature after Open, over every function of a
// large program in turn (the type cache warm as it is after the first few).
func BenchmarkFunc(b *testing.B) {
	f, err := Open(bigProgram(b))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var names []string
	for name := range f.funcs {
		names = append(names, name)
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := f.Func(names[i%len(names)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
