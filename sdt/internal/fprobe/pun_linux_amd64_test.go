package fprobe

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gosdt/gosdt/internal/functab"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

var (
	leafFrameFn  = target.LeafFrame
	builderReset = (*strings.Builder).Reset
)

// callers runs n goroutines, each calling call with i counting up from its number
// until stop is called, which waits for them and says how many calls call found
// wrong, of how many.
func callers(n int, call func(i int) bool) (stop func() (bad, calls int64)) {
	var done atomic.Bool
	var wrong, made atomic.Int64
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !done.Load(); i++ {
				if !call(i) {
					wrong.Add(1)
				}
				made.Add(1)
			}
		}()
	}
	return func() (int64, int64) {
		done.Store(true)
		wg.Wait()
		return wrong.Load(), made.Load()
	}
}

// mapped reports whether this process maps the page at p (/proc/self/maps).
func mapped(t *testing.T, p uintptr) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		lo, hi, ok := strings.Cut(strings.Fields(l + " x")[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		z, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uint64(p) >= a && uint64(p) < z {
			return true
		}
	}
	return false
}

// TestLeafPunned: a leaf whose first instruction is shorter than a jump (LeafFrame's
// PUSHQ BP) takes its entry probe by a punned jump: only its first byte is written,
// E9, whose displacement is the bytes after it as they stand, to a trampoline in a
// page of its own; the hook sees the arguments, every call is counted, the leaf
// computes what it did, also while goroutines call it and the probe is switched on
// and off; switched off, the entry's byte is back and the trampoline's page gone.
func TestLeafPunned(t *testing.T) {
	f := lookupLeaf(t, "LeafFrame")
	if f.leaf.pun == 0 || len(f.orig) >= 5 {
		t.Fatalf("LeafFrame's entry is not punned: first instruction % x, trampoline %#x", f.orig, f.leaf.pun)
	}
	before := bytes.Clone(mem(f.site, 8))
	tramp := f.leaf.pun &^ 4095
	if mapped(t, tramp) {
		t.Fatalf("the trampoline's page %#x is mapped before any probe", tramp)
	}
	var words [2]atomic.Uint64
	hook := func(_ *Func, a *Args) { words[0].Store(a.Word(0)); words[1].Store(a.Word(1)) }
	ret := f.ReturnErr() == nil
	s0 := f.Stats()
	if err := Set([]Change{{Func: f, Entry: hook, Pinned: true, Return: ret}}); err != nil {
		t.Fatal(err)
	}
	now := mem(f.site, 8)
	if now[0] != punOpcode || !bytes.Equal(now[1:], before[1:]) {
		t.Errorf("the entry holds % x, was % x: only its first byte should change, to %#x", now, before, punOpcode)
	}
	if !mapped(t, tramp) {
		t.Errorf("the trampoline's page %#x is not mapped", tramp)
	}
	if _, _, bad := f.State(); bad != "" {
		t.Errorf("the probe's state: %s", bad)
	}
	// Through a func value: DX, the closure context amd64's leaf stub checks for a
	// stack address (DESIGN.md, "Leaves"), then holds the static func value.
	if r := leafFrameFn(3, 42); r != 42*4+3 || words[0].Load() != 3 || words[1].Load() != 42 {
		t.Errorf("LeafFrame(3, 42) = %d, its hook saw %d, %d", r, words[0].Load(), words[1].Load())
	}
	if s := f.Stats(); s.Entries-s0.Entries != 1 || ret && s.Returns-s0.Returns != 1 {
		t.Errorf("one call: %+v (returns probed: %v), %d skipped", s, ret, f.Skipped())
	}
	// Goroutines call it while it is switched on and off, some never yielding.
	stop := callers(4, func(i int) bool { return target.LeafFrame(i, i*7) == i*28+i })
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	for n := range rounds {
		if err := Set([]Change{{Func: f, Entry: hook, Pinned: true, Return: ret && n%3 == 0}}); err != nil {
			t.Fatal(err)
		}
		if n == rounds/2 { // a collection with the probe on (slow: DESIGN.md, "Not done yet")
			runtime.GC()
		}
		if err := Set([]Change{{Func: f}}); err != nil {
			t.Fatal(err)
		}
	}
	if bad, calls := stop(); bad != 0 {
		t.Fatalf("%d of %d calls returned a wrong result", bad, calls)
	} else {
		t.Logf("%d calls while switched %d times; %d entries, %d skipped", calls, rounds, f.Stats().Entries, f.Skipped())
	}
	if now := mem(f.site, 8); !bytes.Equal(now, before) {
		t.Errorf("switched off, the entry holds % x, was % x", now, before)
	}
	if mapped(t, tramp) || len(tramps) != 0 || len(trampPages) != 0 {
		t.Errorf("switched off, the trampoline's page %#x is still mapped (%d trampolines, %d pages kept)", tramp, len(tramps), len(trampPages))
	}
}

// TestPunnedMany: the entry probes of every leaf of this program that takes a punned
// jump, switched on together (as many as there are slots at once) while goroutines
// run strconv's, unicode/utf8's, strings' and bytes' code and check what it computes,
// then off: each batch is written and taken away in one rendezvous, trampolines that fall
// in one page share it, and once all are off no trampoline page is left. Functions
// linked from C (the race detector's runtime) are refused.
func TestPunnedMany(t *testing.T) {
	m := functab.Self()
	if m.Table == nil {
		t.Skip("no function table")
	}
	var punned []*Func
	foreign := 0
	for i := 0; i < m.Table.Len(); i++ {
		f, err := Lookup(string(m.Table.Name(i)))
		if goCompiled(m.Table, i) != nil { // the race detector's C runtime, under -race
			foreign++
			if err == nil || strings.Contains(err.Error(), "as a leaf") && !strings.Contains(err.Error(), "not Go code") {
				t.Errorf("%s, linked from C: %v, want refused (as a leaf: as not Go code)", m.Table.Name(i), err)
			}
			continue
		}
		if err == nil && f.Leaf() && f.leaf.pun != 0 {
			punned = append(punned, f)
		}
	}
	if len(punned) < 10 {
		t.Fatalf("%d punned leaves in this program, want 10 or more", len(punned))
	}
	stop := callers(4, func(i int) bool {
		s := strconv.Itoa(i) + "é" + strconv.FormatFloat(float64(i)/7, 'g', -1, 64)
		n, err := strconv.Atoi(s[:strings.IndexByte(s, 0xC3)])
		return err == nil && n == i && utf8.ValidString(s) && utf8.RuneCountInString(s) == len(s)-1 &&
			strings.ToUpper(s) == string(bytes.ToUpper([]byte(s))) && strings.Contains(s, "é")
	})
	var hooked atomic.Int64
	hook := func(*Func, *Args) { hooked.Add(1) }
	for round := range 3 {
		for lo := 0; lo < len(punned); lo += leafSlotCount {
			batch := punned[lo:min(lo+leafSlotCount, len(punned))]
			var on, off []Change
			for _, f := range batch {
				on = append(on, Change{Func: f, Entry: hook, Pinned: true, Return: round == 1 && f.ReturnErr() == nil})
				off = append(off, Change{Func: f})
			}
			if err := Set(on); err != nil {
				t.Fatal(err)
			}
			for _, f := range batch {
				if _, _, why := f.State(); why != "" {
					t.Errorf("%s: %s", f.Name, why)
				}
			}
			time.Sleep(5 * time.Millisecond)
			if err := Set(off); err != nil {
				t.Fatal(err)
			}
		}
	}
	if bad, calls := stop(); bad != 0 {
		t.Errorf("%d of %d computations went wrong while the probes were switched", bad, calls)
	}
	if len(tramps) != 0 || len(trampPages) != 0 {
		t.Errorf("all off, and %d trampolines in %d pages kept", len(tramps), len(trampPages))
	}
	t.Logf("%d punned leaves switched 3 times, %d hooks run; %d functions linked from C refused", len(punned), hooked.Load(), foreign)
}

// TestReturnPunned: a leaf's RET followed by code (LeafTwoRets' first, before its
// second path) takes its return probe by a punned jump: only the RET's byte is
// written; both returns are counted, each with its entry's time, the leaf computes
// what it did while goroutines take both paths and the probes are switched; switched
// off, the RET is back and no trampoline is left.
func TestReturnPunned(t *testing.T) {
	f := lookupLeaf(t, "LeafTwoRets")
	if f.ReturnErr() != nil {
		t.Fatal(f.ReturnErr())
	}
	var punnedRet uint64
	for k, r := range f.retSites {
		if f.jret.puns[k] != 0 {
			punnedRet = r.Addr
		}
	}
	if punnedRet == 0 {
		t.Fatalf("no return of LeafTwoRets takes a punned jump: %+v", f.retSites)
	}
	before := bytes.Clone(mem(uintptr(punnedRet), 8))
	var hooked atomic.Int64
	hook := func(*Func, *Args) { hooked.Add(1) }
	if err := Set([]Change{{Func: f, Entry: hook, Pinned: true, Return: true}}); err != nil {
		t.Fatal(err)
	}
	if now := mem(uintptr(punnedRet), 8); now[0] != punOpcode || !bytes.Equal(now[1:], before[1:]) {
		t.Errorf("the RET holds % x, was % x: only its byte should change", now, before)
	}
	if _, _, bad := f.State(); bad != "" {
		t.Errorf("the probe's state: %s", bad)
	}
	f.SetReturnQuiet(true)
	st0, fo0, sk0 := f.Stats(), f.Folded(), f.Skipped()
	const n = 10000
	for i := range n {
		if target.LeafTwoRets(i, 5) != leafTwoRets(i, 5) {
			t.Fatal("LeafTwoRets returned a wrong result")
		}
	}
	st, fo, sk := f.Stats(), f.Folded(), f.Skipped()-sk0
	f.SetReturnQuiet(false)
	if e, r := st.Entries-st0.Entries, st.Returns-st0.Returns; e+sk != n || r != n || st.NoEntry != st0.NoEntry || fo.Count-fo0.Count != n {
		t.Errorf("%d calls by both paths: %d entries, %d skipped, %d returns, %d without their entry's time, %d folded", n, e, sk, r, st.NoEntry-st0.NoEntry, fo.Count-fo0.Count)
	}
	stop := callers(4, func(i int) bool { return target.LeafTwoRets(i%11, 5) == leafTwoRets(i%11, 5) })
	start := time.Now()
	for k := range 20 {
		if err := Set([]Change{{Func: f, Entry: hook, Pinned: true, Return: k%2 == 0}}); err != nil {
			t.Fatal(err)
		}
		if k == 10 { // a collection with the probes on (slow: DESIGN.md, "Not done yet")
			runtime.GC()
		}
		if err := Set([]Change{{Func: f}}); err != nil {
			t.Fatal(err)
		}
	}
	bad, calls := stop()
	t.Logf("switched 20 times in %v", time.Since(start))
	if bad != 0 {
		t.Errorf("%d of %d calls returned a wrong result while the probes were switched", bad, calls)
	}
	if now := mem(uintptr(punnedRet), 8); !bytes.Equal(now, before) {
		t.Errorf("switched off, the RET holds % x, was % x", now, before)
	}
	if len(tramps) != 0 || len(trampPages) != 0 {
		t.Errorf("switched off, %d trampolines in %d pages kept", len(tramps), len(trampPages))
	}
}

func leafTwoRets(a, b int) int {
	if a > b {
		return a - b
	}
	return b*3 + a
}

// TestReturnPunnedFrame: a function with a stack check and a frame of only the saved
// BP (strings.(*Builder).Reset), whose POPQ BP; RET is too short for the return
// stub's call and is followed by its morestack block, takes its return by a punned
// jump: every call's return is counted with its entry's time, and the function does
// what it did.
func TestReturnPunnedFrame(t *testing.T) {
	const name = "strings.(*Builder).Reset"
	var b strings.Builder
	f, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if f.Leaf() || f.jret == nil || len(f.jret.puns) != 1 || f.jret.puns[0] == 0 {
		t.Skipf("%s is not a framed function whose only return takes a punned jump in this Go's build (leaf %v, returns %v, %v)", name, f.Leaf(), f.Returns(), f.ReturnErr())
	}
	if err := Set([]Change{{Func: f, Entry: func(*Func, *Args) {}, Return: true}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := Set([]Change{{Func: f}}); err != nil {
			t.Error(err)
		}
	}()
	if _, _, bad := f.State(); bad != "" {
		t.Errorf("the probe's state: %s", bad)
	}
	f.SetReturnQuiet(true)
	defer f.SetReturnQuiet(false)
	st0, fo0 := f.Stats(), f.Folded()
	const n = 5000
	for i := range n {
		b.WriteString(strconv.Itoa(i))
		builderReset(&b) // not inlined: through a func value
		if b.Len() != 0 {
			t.Fatal("Reset left bytes")
		}
	}
	st, fo := f.Stats(), f.Folded()
	if e, r := st.Entries-st0.Entries, st.Returns-st0.Returns; e < n || r < n || fo.Count-fo0.Count < n || st.NoEntry != st0.NoEntry {
		t.Errorf("%d calls: %d entries, %d returns, %d folded, %d without their entry's time", n, e, r, fo.Count-fo0.Count, st.NoEntry-st0.NoEntry)
	}
}
