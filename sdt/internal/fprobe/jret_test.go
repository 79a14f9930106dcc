package fprobe

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// lookupJret looks up a function of package target whose returns are jumps to a return
// slot, skipping where there are none.
func lookupJret(t *testing.T, name string) *Func {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		testutil.Skip(t, "", "return slots are built for amd64 and arm64 only (DESIGN.md, \"Returns by a jump\")")
	}
	f := lookup(t, name)
	if f.jret == nil {
		t.Fatalf("%s's returns are not jumps: %v", name, f.ReturnErr())
	}
	return f
}

// TestJumpReturn: a leaf's return probe (a jump over its RET and the padding after it)
// gives one event per call, with the entry's time and the results the caller received,
// into the ring and folded; the registry's checker finds the text right whatever the
// state, and taking the probe away restores the RET (and the padding) exactly. A
// leaf with several RETs takes a jump at each; an unpinned entry hook is refused on
// a leaf whose entry's jump is in for its return.
func TestJumpReturn(t *testing.T) {
	global, loop := lookupJret(t, "LeafGlobal"), lookupJret(t, "LeafLoop")
	ptr := lookupLeaf(t, "LeafPtr")
	// Each RET takes a jump: on amd64 the first, followed by code, a punned one
	// (pun_linux_amd64_test.go, TestReturnPunned).
	if n := len(ptr.Returns()); n < 2 || ptr.ReturnErr() != nil {
		t.Errorf("LeafPtr's returns: %d, %v; want each of its RETs", n, ptr.ReturnErr())
	}
	// Switched on with its return, then given an unpinned entry hook: refused, its
	// entry's jump already in or not.
	if err := Set([]Change{{Func: ptr, Return: true}}); err != nil {
		t.Fatal(err)
	}
	if err := Set([]Change{{Func: ptr, Entry: func(*Func, *Args) {}, Return: true}}); err == nil || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("an unpinned entry hook on a leaf whose return is probed: %v", err)
	}
	if err := Set([]Change{{Func: ptr}}); err != nil {
		t.Fatal(err)
	}
	rets := global.Returns()
	if len(rets) != 1 {
		t.Fatalf("LeafGlobal's returns: %#x", rets)
	}
	want := []byte{0xC3, 0xCC, 0xCC, 0xCC, 0xCC} // RET and the linker's padding
	if runtime.GOARCH == "arm64" {
		want = []byte{0xC0, 0x03, 0x5F, 0xD6} // RET
	}
	orig := append([]byte(nil), mem(rets[0], len(want))...)
	if !bytes.Equal(orig, want) {
		t.Fatalf("LeafGlobal's return: % x", orig)
	}
	check := func(when string, f *Func) {
		t.Helper()
		if _, _, bad := f.State(); bad != "" {
			t.Errorf("%s: %s: State: %s", when, f.Name, bad)
		}
	}
	var hooked int
	hook := func(*Func, *Args) { hooked++ }
	for _, quiet := range []bool{false, true} {
		// An entry hook with the returns: the entry is a jump to a slot too.
		if err := Set([]Change{{Func: global, Entry: hook, Pinned: true, Return: true}, {Func: loop, Return: true}}); err != nil {
			t.Fatal(err)
		}
		check("on", global)
		check("on", loop)
		if bytes.Equal(mem(rets[0], len(orig)), orig) {
			t.Error("the return's jump is not written")
		}
		global.SetReturnQuiet(quiet)
		loop.SetReturnQuiet(quiet)
		want := target.LeafLoop(100)
		for loop.ReadReturns(make([]Return, 8)) > 0 {
		}
		st0, lst0, fo0, sk0 := global.Stats(), loop.Stats(), global.Folded(), global.Skipped()
		hooked = 0
		const n = 200 // under a ring: no reader while they run
		for i := 0; i < n; i++ {
			if r := target.LeafGlobal(i); r != 7+i {
				t.Fatalf("LeafGlobal(%d) returned %d", i, r)
			}
			if r := target.LeafLoop(100); r != want {
				t.Fatalf("LeafLoop(100) returned %d", r)
			}
		}
		st, lst, fo := global.Stats(), loop.Stats(), global.Folded()
		// An entry whose registers hold a stack address (amd64 checks DX too) is
		// skipped, counted; its return is still seen, with its time.
		if e, sk := st.Entries-st0.Entries, global.Skipped()-sk0; e+sk != n || int64(hooked) != e {
			t.Errorf("quiet %v: %d entries, %d skipped, %d hooks for %d calls", quiet, e, sk, hooked, n)
		}
		for _, d := range []Stats{{Returns: st.Returns - st0.Returns, NoEntry: st.NoEntry - st0.NoEntry, Dropped: st.Dropped - st0.Dropped},
			{Returns: lst.Returns - lst0.Returns, NoEntry: lst.NoEntry - lst0.NoEntry, Dropped: lst.Dropped - lst0.Dropped}} {
			if d.Returns != n || d.NoEntry != 0 || d.Dropped != 0 {
				t.Errorf("quiet %v: %+v for %d calls: want %d returns, each with its entry's time", quiet, d, n, n)
			}
		}
		if quiet {
			if fo.Returns-fo0.Returns != n || fo.Count-fo0.Count != n {
				t.Errorf("folded %+v, before %+v: want %d more with a latency", fo, fo0, n)
			}
		} else {
			buf := make([]Return, 2*n)
			k := global.ReadReturns(buf)
			if k != n {
				t.Errorf("%d events read for %d calls", k, n)
			}
			for i, e := range buf[:k] {
				if e.Latency < 0 || e.Results[0] != uint64(7+i) || e.Goid == 0 {
					t.Fatalf("event %d: %+v: want a latency, result %d, a goroutine", i, e, 7+i)
				}
			}
			for loop.ReadReturns(buf) > 0 {
			}
		}
		global.SetReturnQuiet(false)
		loop.SetReturnQuiet(false)
		// Returns off, the entry kept; then all off.
		if err := Set([]Change{{Func: global, Entry: hook, Pinned: true}}); err != nil {
			t.Fatal(err)
		}
		check("entry only", global)
		if !bytes.Equal(mem(rets[0], len(orig)), orig) {
			t.Errorf("the return with its probe off: % x, want % x", mem(rets[0], len(orig)), orig)
		}
		if err := Set([]Change{{Func: global}, {Func: loop}}); err != nil {
			t.Fatal(err)
		}
		check("off", global)
		check("off", loop)
		if !bytes.Equal(mem(rets[0], len(orig)), orig) {
			t.Errorf("the return after removal: % x, want % x", mem(rets[0], len(orig)), orig)
		}
	}
	// A burst beyond the rings with nobody reading: a leaf's entry cannot wait for the
	// reader (no safe point), so the rest are dropped, each counted; none waits.
	if err := Set([]Change{{Func: loop, Return: true}}); err != nil {
		t.Fatal(err)
	}
	st0 := loop.Stats()
	const burst = 4 * ringSize
	for i := 0; i < burst; i++ {
		target.LeafLoop(i & 7)
	}
	if err := Set([]Change{{Func: loop}}); err != nil {
		t.Fatal(err)
	}
	read := 0
	for n := loop.ReadReturns(make([]Return, ringSize)); n > 0; n = loop.ReadReturns(make([]Return, ringSize)) {
		read += n
	}
	st := loop.Stats()
	if r, d := st.Returns-st0.Returns, st.Dropped-st0.Dropped; r != burst || int64(read)+d != r || d == 0 || st.Waited != st0.Waited {
		t.Errorf("a burst of %d: %d returns, %d read, %d dropped, %d waited", burst, r, read, d, st.Waited-st0.Waited)
	}
	// Goroutines on several Ps: every return finds its entry's time.
	if err := Set([]Change{{Func: loop, Return: true}}); err != nil {
		t.Fatal(err)
	}
	loop.SetReturnQuiet(true)
	st0, fo0 := loop.Stats(), loop.Folded()
	const G, N = 4, 5000
	var wg sync.WaitGroup
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < N; i++ {
				target.LeafLoop(i & 15)
			}
		}()
	}
	wg.Wait()
	st, fo := loop.Stats(), loop.Folded()
	loop.SetReturnQuiet(false)
	if err := Set([]Change{{Func: loop}}); err != nil {
		t.Fatal(err)
	}
	if d := st.Returns - st0.Returns; d != G*N || st.NoEntry != st0.NoEntry || fo.Count-fo0.Count != G*N {
		t.Errorf("%d calls: %d returns, %d without entry time, %d folded with a latency", G*N, d, st.NoEntry-st0.NoEntry, fo.Count-fo0.Count)
	}
}
