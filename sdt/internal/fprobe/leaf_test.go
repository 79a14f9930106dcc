package fprobe

import (
	"io"
	"math"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// lookupLeaf looks up a leaf of package target, skipping where leaves take no probe.
func lookupLeaf(t *testing.T, name string) *Func {
	t.Helper()
	f := lookup(t, name)
	if !f.Leaf() {
		t.Fatalf("%s is not read as a leaf", name)
	}
	return f
}

// onLeaf switches f's entry probe on with a pinned hook h.
func onLeaf(t *testing.T, f *Func, h EntryHook) {
	t.Helper()
	if err := Set([]Change{{Func: f, Entry: h, Pinned: true}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Set([]Change{{Func: f}}); err != nil {
			t.Error(err)
		}
	})
}

// TestLeafEntryArgs: a leaf's entry probe delivers its argument registers to a pinned
// hook, counts every call, and the leaf computes what it did; an argument pointing into
// the goroutine's stack skips the hook, counted; an unpinned hook is refused with the
// reason (returns: jret_test.go).
func TestLeafEntryArgs(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		testutil.Skip(t, "", "leaf slots are built for amd64 and arm64 only (DESIGN.md, \"Leaves\")")
	}
	ptr, float := lookupLeaf(t, "LeafPtr"), lookupLeaf(t, "LeafFloat")
	if err := Set([]Change{{Func: ptr, Entry: func(*Func, *Args) {}}}); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("an unpinned hook on a leaf: %v", err)
	}
	if err := Set([]Change{{Func: ptr, Entry: func(*Func, *Args) {}, Return: ptr.ReturnErr() == nil}}); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("an unpinned hook on a leaf, with its return: %v", err)
	}
	if on, _ := ptr.On(); on {
		t.Fatal("a refused change left the probe on")
	}
	// LeafPtr(p *int, k int): two argument components, so two integer registers
	// checked for a stack address (arm64: both read before written).
	if r := ptr.leaf.check.regs; r != 0b11 {
		t.Errorf("LeafPtr's registers checked: %#b, want AX/R0 and BX/R1", r)
	}
	// A signature is held against the leaf's argument area (no spill block of its own).
	if err := ptr.CheckLayout([]arch.Spill{{Reg: 0, Size: 8, Off: 0}, {Reg: 1, Size: 8, Off: 8}}); err != nil {
		t.Errorf("LeafPtr's own signature: %v", err)
	}
	if err := ptr.CheckLayout([]arch.Spill{{Reg: 0, Size: 8, Off: 0}}); err == nil {
		t.Error("a signature of one word taken for LeafPtr's two")
	}
	if err := ptr.CheckLayout([]arch.Spill{{Reg: 0, Size: 8, Off: 0}, {Reg: 20, Size: 8, Off: 8}}); err == nil {
		t.Error("a register the stub does not save taken")
	}
	var got [2][]uint64
	var floats [2]uint32
	var traced [2]bool
	hook := func(f *Func, a *Args) {
		k := 0
		if f == float {
			k = 1
		}
		got[k] = got[k][:0]
		for i := 0; i < a.Words(); i++ {
			got[k] = append(got[k], a.Word(i))
		}
		floats[k] = a.float
		// The traceback goes through the stubs to the leaf's caller.
		pcs := make([]uintptr, 32)
		fr := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
		for {
			x, more := fr.Next()
			if strings.HasSuffix(x.Function, ".TestLeafEntryArgs") {
				traced[k] = true
			}
			if !more {
				break
			}
		}
	}
	onLeaf(t, ptr, hook)
	onLeaf(t, float, hook)
	heap := new(int)
	*heap = 5
	if r := target.LeafPtr(heap, 3); r != 5+3*100003 {
		t.Errorf("LeafPtr returned %d", r)
	}
	if len(got[0]) < 2 || got[0][0] != uint64(uintptr(unsafe.Pointer(heap))) || got[0][1] != 3 {
		t.Errorf("LeafPtr's words %#x, want %p, 3 first", got[0], heap)
	}
	if r := target.LeafFloat(7, 2.5, 3); r != 7*1000003-3+2.5*2.5 {
		t.Errorf("LeafFloat returned %v", r)
	}
	if len(got[1]) <= leafInts || got[1][0] != 7 || got[1][1] != 3 || got[1][leafInts] != math.Float64bits(2.5) || floats[1]&(1<<leafInts) == 0 {
		t.Errorf("LeafFloat's words %#x (floats %#x), want 7, 3 and the first float word 2.5", got[1], floats[1])
	}
	// The displaced instruction addresses memory relative to its pc: re-encoded.
	global := lookupLeaf(t, "LeafGlobal")
	var globalWords atomic.Int64
	onLeaf(t, global, func(_ *Func, a *Args) { globalWords.Store(int64(a.Word(0))) })
	if r := target.LeafGlobal(5); r != 12 || globalWords.Load() != 5 {
		t.Errorf("LeafGlobal(5) returned %d, its hook saw %d", r, globalWords.Load())
	}
	if !traced[0] || !traced[1] {
		t.Errorf("the hook's call stack does not reach the leaf's caller: %v", traced)
	}
	if s := ptr.Stats(); s.Entries != 1 {
		t.Errorf("LeafPtr: %+v, want 1 entry", s)
	}
	// A pointer into this goroutine's stack: the hook is not run (a stack move in it
	// would leave the saved word stale), the call is counted as skipped.
	var local [4]int
	local[0] = 9
	got[0] = nil
	if r := target.LeafPtr(&local[0], 1); r != 9+100003 {
		t.Errorf("LeafPtr on the stack returned %d", r)
	}
	if got[0] != nil || ptr.Skipped() != 1 || ptr.Stats().Entries != 1 {
		t.Errorf("a stack pointer argument: words %#x, skipped %d, %+v; want no hook, 1 skipped", got[0], ptr.Skipped(), ptr.Stats())
	}
}

var leafSink atomic.Pointer[int]

// TestLeafTorture switches leaf entry probes (and their return probes, where they take
// a jump) on and off while goroutines run the leaves in tight loops (one never yields:
// only asynchronous preemption stops it), the GC and the CPU profiler run, and the hook
// grows the stack; at GOMAXPROCS 1, 2 and 8. Every call returns what the unprobed leaf
// returns; while the probes stay on, every call is an entry or a skip, and a return
// with its entry's time.
func TestLeafTorture(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		testutil.Skip(t, "", "leaf slots are built for amd64 and arm64 only (DESIGN.md, \"Leaves\")")
	}
	ptr, loop := lookupLeaf(t, "LeafPtr"), lookupLeaf(t, "LeafLoop")
	switched := []*Func{ptr, loop}
	if f, err := Lookup(pkg + "LeafFrame"); err == nil && f.Leaf() {
		switched = append(switched, f) // amd64: a punned jump, and PUSHQ BP in the slot
	}
	want := target.LeafLoop(1000)
	for _, procs := range []int{1, 2, 8} {
		t.Run("GOMAXPROCS="+itoa(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var stop atomic.Bool
			var calls, bad atomic.Int64
			var wg sync.WaitGroup
			var escaped atomic.Pointer[int]
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := new(int)
					if g%2 == 0 {
						escaped.Store(p) // on the heap: the hook runs; else on the stack: skipped
					}
					for i := 0; !stop.Load(); i++ {
						*p = i
						if target.LeafPtr(p, 2) != i+2*100003 || target.LeafLoop(1000) != want || target.LeafFrame(i, 5) != 20+i {
							bad.Add(1)
						}
						calls.Add(3)
					}
				}()
			}
			wg.Add(1)
			go func() { // never yields between its checks of stop: a long leaf
				defer wg.Done()
				for !stop.Load() {
					if target.LeafLoop(1<<22) != target.LeafLoop(1<<22) {
						bad.Add(1)
					}
				}
			}()
			var depth, hooked atomic.Int64
			hook := func(f *Func, a *Args) {
				hooked.Add(1)
				if depth.Add(1)%64 == 0 {
					depth.Add(int64(grow(1000) & 1)) // 256 bytes a level: grows the stack while the leaf's words are saved
				}
			}
			if err := pprof.StartCPUProfile(io.Discard); err == nil { // its signals' tracebacks meet the slots and stubs
				defer pprof.StopCPUProfile()
			}
			deadline := time.Now().Add(300 * time.Millisecond)
			for n := 0; time.Now().Before(deadline); n++ {
				for _, f := range switched {
					// The returns too where they take a jump (jret.go: LeafLoop's RET;
					// on arm64 LeafPtr's two), into a ring nobody reads or folded.
					ret := f.ReturnErr() == nil
					if err := Set([]Change{{Func: f, Entry: hook, Pinned: true, Return: ret}}); err != nil {
						t.Fatal(err)
					}
					f.SetReturnQuiet(n%2 == 0)
				}
				if n%4 == 0 {
					runtime.GC()
				}
				time.Sleep(time.Millisecond)
				for _, f := range switched {
					if err := Set([]Change{{Func: f}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			stop.Store(true)
			wg.Wait()
			if bad.Load() != 0 {
				t.Fatalf("%d of %d calls returned a wrong result", bad.Load(), calls.Load())
			}
			t.Logf("%d calls, %d hooks run, %d+%d entries skipped", calls.Load(), hooked.Load(), ptr.Skipped(), loop.Skipped())
			if hooked.Load() == 0 {
				t.Error("no hook ran while the probes were switched")
			}
			// On and steady: every call counted, entered or skipped.
			onLeaf(t, ptr, hook)
			e0, s0 := ptr.Stats().Entries, ptr.Skipped()
			p := new(int)
			leafSink.Store(p)
			const n = 10000
			for i := 0; i < n; i++ {
				if target.LeafPtr(p, 1) != 100003 {
					t.Fatal("LeafPtr returned a wrong result")
				}
			}
			if d := ptr.Stats().Entries - e0 + ptr.Skipped() - s0; d != n {
				t.Errorf("%d calls, %d entries and skips", n, d)
			}
			if err := Set([]Change{{Func: ptr}}); err != nil {
				t.Fatal(err)
			}
			if loop.ReturnErr() != nil {
				return
			}
			// The same with LeafLoop's return probe: N calls, N returns, each with its
			// entry's time (taken whether or not the hook runs).
			if err := Set([]Change{{Func: loop, Entry: hook, Pinned: true, Return: true}}); err != nil {
				t.Fatal(err)
			}
			loop.SetReturnQuiet(true)
			st0, fo0, s0 := loop.Stats(), loop.Folded(), loop.Skipped()
			for i := 0; i < n; i++ {
				if target.LeafLoop(3) != target.LeafLoop(3) {
					t.Fatal("LeafLoop returned a wrong result")
				}
			}
			st, fo, sk := loop.Stats(), loop.Folded(), loop.Skipped()-s0
			loop.SetReturnQuiet(false)
			if err := Set([]Change{{Func: loop}}); err != nil {
				t.Fatal(err)
			}
			if e, r := st.Entries-st0.Entries, st.Returns-st0.Returns; e+sk != 2*n || r != 2*n || st.NoEntry != st0.NoEntry || fo.Count-fo0.Count != 2*n {
				t.Errorf("%d calls: %d entries, %d skipped, %d returns, %d without their entry's time, %d folded with a latency", 2*n, e, sk, r, st.NoEntry-st0.NoEntry, fo.Count-fo0.Count)
			}
		})
	}
}

// BenchmarkLeafCall is the cost of one call of a leaf: never probed, with an entry
// probe whose pinned hook counts, counted only (SetQuiet), and counted with its return
// by a jump folded with its latency (SetReturnQuiet).
func BenchmarkLeafCall(b *testing.B) {
	f, err := Lookup(pkg + "LeafLoop")
	if err != nil || !f.Leaf() {
		b.Skip("no leaf probes here:", err)
	}
	run := func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			target.LeafLoop(1)
		}
	}
	b.Run("unprobed", run)
	var n int64
	count := func(*Func, *Args) { n++ }
	for _, mode := range []string{"entry", "entry-quiet", "entry+return-folded"} {
		ret := mode == "entry+return-folded"
		if ret && f.ReturnErr() != nil {
			continue
		}
		b.Run(mode, func(b *testing.B) {
			if err := Set([]Change{{Func: f, Entry: count, Pinned: true, Return: ret}}); err != nil {
				b.Fatal(err)
			}
			f.SetQuiet(mode != "entry")
			f.SetReturnQuiet(ret)
			b.ResetTimer()
			run(b)
			b.StopTimer()
			f.SetQuiet(false)
			f.SetReturnQuiet(false)
			if err := Set([]Change{{Func: f}}); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestLeafLoadsInPlace: a leaf whose first instruction is a load that may fault, into
// registers that hold no argument, takes its probe on the instruction after
// the load, which runs in place: the probe sees the arguments and every call; a nil
// argument faults at the leaf's own pc, a panic recovered as any nil dereference, with
// the leaf in its call stack; all while goroutines call it and the probe is switched
// on and off, at GOMAXPROCS 1, 2 and 8. A leaf whose load writes an argument register
// stays refused, with the reason.
func TestLeafLoadsInPlace(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		testutil.Skip(t, "", "leaf slots are built for amd64 and arm64 only (DESIGN.md, \"Leaves\")")
	}
	f := lookupLeaf(t, "LeafLoadsFirst")
	if f.site == f.Entry {
		t.Fatalf("LeafLoadsFirst's probe is at its entry %#x: its first instruction is a load that may fault", f.Entry)
	}
	x := 1
	if target.LeafLoadsArgs(&x, &x) != 2 || target.LeafLoadScaled(&x) != 0 { // linked in, to be refused
		t.Fatal("LeafLoadsArgs, LeafLoadScaled")
	}
	argLoad := "LeafLoadsArgs" // arm64: two loads, each into its pointer's register
	if runtime.GOARCH == "amd64" {
		argLoad = "LeafLoadScaled" // amd64: MOVQ (AX), AX, then a SARQ a slot runs
	}
	if _, err := Lookup(pkg + argLoad); err == nil || !strings.Contains(err.Error(), "an argument register") {
		t.Errorf("%s (loads into its argument's register first): %v, want refused naming the argument register", argLoad, err)
	}
	nilCall := func() (err error, inStack bool) {
		defer func() {
			r := recover()
			err, _ = r.(error)
			pcs := make([]uintptr, 32)
			fr := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
			for {
				x, more := fr.Next()
				inStack = inStack || strings.HasSuffix(x.Function, ".LeafLoadsFirst")
				if !more {
					break
				}
			}
		}()
		target.LeafLoadsFirst(nil)
		return nil, false
	}
	var seen atomic.Uintptr
	var hooked atomic.Int64
	onLeaf(t, f, func(_ *Func, a *Args) { seen.Store(uintptr(a.Word(0))); hooked.Add(1) })
	p := &target.Pair{A: 4, B: 5}
	if r := target.LeafLoadsFirst(p); r != 17 || seen.Load() != uintptr(unsafe.Pointer(p)) {
		t.Fatalf("LeafLoadsFirst returned %d, its hook saw %#x, want 17 and %p", r, seen.Load(), p)
	}
	if err, in := nilCall(); err == nil || !strings.Contains(err.Error(), "nil pointer dereference") || !in {
		t.Fatalf("LeafLoadsFirst(nil) probed: %v (the leaf in the panic's stack: %v), want a nil dereference at the leaf", err, in)
	}
	if n := hooked.Load(); n != 1 {
		t.Errorf("%d entries hooked, want 1: the call that faulted never reached the probe", n)
	}
	for _, procs := range []int{1, 2, 8} {
		t.Run("GOMAXPROCS="+itoa(procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var stop atomic.Bool
			var bad, calls atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					q := &target.Pair{A: g, B: 1}
					for i := 0; !stop.Load(); i++ {
						if target.LeafLoadsFirst(q) != 3*g+1 {
							bad.Add(1)
						}
						if i%64 == 0 {
							if err, in := nilCall(); err == nil || !in {
								bad.Add(1)
							}
						}
						calls.Add(1)
					}
				}()
			}
			for i := 0; i < 50; i++ {
				on := Change{Func: f, Entry: func(*Func, *Args) { hooked.Add(1) }, Pinned: true}
				if i%2 == 1 {
					on = Change{Func: f}
				}
				if err := Set([]Change{on}); err != nil {
					t.Error(err)
					break
				}
				if i%10 == 0 {
					runtime.GC()
				}
				time.Sleep(time.Millisecond)
			}
			stop.Store(true)
			wg.Wait()
			if bad.Load() != 0 || calls.Load() == 0 {
				t.Errorf("%d of %d calls wrong", bad.Load(), calls.Load())
			}
		})
	}
}
