package fprobe

import (
	"os"
	"strconv"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// TestCallInstructions is a measurement, not a check: bench/fprobe_insns.sh runs it
// under callgrind (amd64) or qemu (arm64) and counts the instructions each loop
// retires per call of target.Sum: off, an entry probe nobody consumes (SetQuiet), that
// and its returns folded (SetReturnQuiet: what sdt does for a count), and an entry
// hook with the returns put into the rings. Each mode has a loop function of its own,
// whose name the counting tools key on.
func TestCallInstructions(t *testing.T) {
	if os.Getenv("FPROBE_INSNS") == "" {
		t.Skip("a measurement: bench/fprobe_insns.sh runs it under callgrind or qemu")
	}
	n, err := strconv.Atoi(os.Getenv("FPROBE_INSNS"))
	if err != nil || n <= 0 {
		t.Fatalf("FPROBE_INSNS=%q: want a number of calls", os.Getenv("FPROBE_INSNS"))
	}
	f := lookup(t, "Sum")
	s := []int{1, 2, 3}
	count := func(*Func, *Args) {}
	set := func(c Change) {
		t.Helper()
		if err := Set([]Change{c}); err != nil {
			t.Fatal(err)
		}
	}
	insnsOff(s, n)
	set(Change{Func: f, Entry: count})
	f.SetQuiet(true)
	insnsEntryQuiet(s, n)
	set(Change{Func: f, Entry: count, Return: true})
	f.SetReturnQuiet(true)
	insnsFolded(s, n)
	f.SetQuiet(false)
	f.SetReturnQuiet(false)
	insnsHookRing(s, n, f)
	// The entry counted only, each return written by the return path into a trace's
	// buffer (room for every record: none read, none dropped).
	b := newTestBufs(procs(), 1<<20*max(1, n*48>>20+1))
	b.d.SetKnown([]uint32{0})
	f.SetQuiet(true)
	f.SetDirect(&DirectSet{Ringless: true, Site: uint64(f.Entry), Bufs: []*DirectBufs{b.d}, Results: []DirectArg{{Kind: DirectInt, Size: 8}}})
	insnsDirect(s, n)
	f.SetDirect(nil)
	if recs, drops := b.records(t); len(recs) != n || drops != 0 {
		t.Errorf("%d records written directly, %d dropped, for %d calls", len(recs), drops, n)
	}
	// The same, with a trace's predicate on the result run by the return path: r0 >
	// 3, which half the calls pass (Sum(s, i%2) is 0 or 6): what --where adds.
	w := newTestBufs(procs(), 1<<20*max(1, n*48>>20+1))
	w.d.filters = true
	w.d.SetWhere([]*Pred{NewPred([]PredIns{{Op: PredInt, Mask: PredGt, X: 1, T: 1, F: 2, K: 3}}, 2)})
	w.d.SetKnown([]uint32{0})
	f.SetDirect(&DirectSet{Ringless: true, Site: uint64(f.Entry), Bufs: []*DirectBufs{w.d}, Results: []DirectArg{{Kind: DirectInt, Size: 8}}, Filters: true})
	insnsWhereDirect(s, n)
	f.SetDirect(nil)
	set(Change{Func: f})
	recs, drops := w.records(t)
	filtered := 0
	for _, x := range w.words {
		filtered += int(x.filtered)
	}
	if len(recs) != n/2 || filtered != n-n/2 || drops != 0 {
		t.Errorf("%d records written directly, %d filtered, %d dropped, for %d calls: want %d, %d, 0", len(recs), filtered, drops, n, n/2, n-n/2)
	}
}

//go:noinline
func insnsWhereDirect(s []int, n int) {
	for i := 0; i < n; i++ {
		target.Sum(s, i%2)
	}
}

//go:noinline
func insnsDirect(s []int, n int) {
	for i := 0; i < n; i++ {
		target.Sum(s, i)
	}
}

//go:noinline
func insnsOff(s []int, n int) {
	for i := 0; i < n; i++ {
		target.Sum(s, i)
	}
}

//go:noinline
func insnsEntryQuiet(s []int, n int) {
	for i := 0; i < n; i++ {
		target.Sum(s, i)
	}
}

//go:noinline
func insnsFolded(s []int, n int) {
	for i := 0; i < n; i++ {
		target.Sum(s, i)
	}
}

// insnsHookRing reads the rings every 64 calls, as BenchmarkProbedCall does: the
// reading is counted too.
//
//go:noinline
func insnsHookRing(s []int, n int, f *Func) {
	buf := make([]Return, 64)
	for i := 0; i < n; i++ {
		target.Sum(s, i)
		if i%64 == 63 {
			f.ReadReturns(buf)
		}
	}
}
