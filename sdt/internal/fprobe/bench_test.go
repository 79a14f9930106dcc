package fprobe

import (
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// BenchmarkProbedCall is the cost of one call of a small function: never probed, with
// its probes taken away again (the original bytes), with an entry probe whose hook
// counts, with an entry probe counted only (SetQuiet), with entry and return probes (the
// return's latency and results into the ring, drained as the benchmark goes), and with
// both counted only, the return's latency folded on its P (SetReturnQuiet).
func BenchmarkProbedCall(b *testing.B) {
	f, err := Lookup(pkg + "Sum")
	if err != nil {
		b.Skip(err)
	}
	s := []int{1, 2, 3}
	run := func(b *testing.B) {
		buf := make([]Return, ringSize)
		b.ResetTimer() // not the rendezvous that switched the probes
		for i := 0; i < b.N; i++ {
			target.Sum(s, i)
			if i%64 == 0 {
				f.ReadReturns(buf)
			}
		}
	}
	b.Run("unprobed", run)
	var n int64
	count := func(*Func, *Args) { n++ }
	b.Run("entry", func(b *testing.B) {
		if err := f.SetEntry(count); err != nil {
			b.Fatal(err)
		}
		run(b)
		if err := f.SetEntry(nil); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("entry-quiet", func(b *testing.B) {
		if err := f.SetEntry(count); err != nil {
			b.Fatal(err)
		}
		f.SetQuiet(true)
		run(b)
		f.SetQuiet(false)
		if err := f.SetEntry(nil); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("entry+return", func(b *testing.B) {
		if err := Set([]Change{{Func: f, Entry: count, Return: true}}); err != nil {
			b.Fatal(err)
		}
		run(b)
		if err := Set([]Change{{Func: f}}); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("entry-quiet+return-folded", func(b *testing.B) {
		if err := Set([]Change{{Func: f, Entry: count, Return: true}}); err != nil {
			b.Fatal(err)
		}
		f.SetQuiet(true)
		f.SetReturnQuiet(true)
		run(b)
		f.SetQuiet(false)
		f.SetReturnQuiet(false)
		if err := Set([]Change{{Func: f}}); err != nil {
			b.Fatal(err)
		}
	})
	b.Run("off-again", run)
}

// BenchmarkAttachDetach is one attach and one detach of an entry probe: two
// rendezvous.
func BenchmarkAttachDetach(b *testing.B) {
	f, err := Lookup(pkg + "Sum")
	if err != nil {
		b.Skip(err)
	}
	h := func(*Func, *Args) {}
	for i := 0; i < b.N; i++ {
		if err := f.SetEntry(h); err != nil {
			b.Fatal(err)
		}
		if err := f.SetEntry(nil); err != nil {
			b.Fatal(err)
		}
	}
}
