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

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

var leafFrameFn = target.LeafFrame

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
	var stop atomic.Bool
	var bad, calls atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !stop.Load(); i++ {
				if target.LeafFrame(i, i*7) != i*28+i {
					bad.Add(1)
				}
				calls.Add(1)
			}
		}()
	}
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	for n := range rounds {
		if err := Set([]Change{{Func: f, Entry: hook, Pinned: true, Return: ret && n%3 == 0}}); err != nil {
			t.Fatal(err)
		}
		if n%50 == 0 {
			runtime.GC()
		}
		if err := Set([]Change{{Func: f}}); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d of %d calls returned a wrong result", bad.Load(), calls.Load())
	}
	t.Logf("%d calls while switched %d times; %d entries, %d skipped", calls.Load(), rounds, f.Stats().Entries, f.Skipped())
	if now := mem(f.site, 8); !bytes.Equal(now, before) {
		t.Errorf("switched off, the entry holds % x, was % x", now, before)
	}
	if mapped(t, tramp) || len(tramps) != 0 || len(trampPages) != 0 {
		t.Errorf("switched off, the trampoline's page %#x is still mapped (%d trampolines, %d pages kept)", tramp, len(tramps), len(trampPages))
	}
}
