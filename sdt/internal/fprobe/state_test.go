package fprobe

import (
	"bytes"
	"testing"

	"github.com/gosdt/gosdt/patch"
)

// TestStateCatches: State, the checker of fprobe's record of a function (the only
// record of whether its probes are on: the registry keeps none), reports each part
// of the function's state that disagrees with the record: the record itself, the
// calls written, the flags the stubs read, and the text of the entry and of a
// return, each broken for real and restored.
func TestStateCatches(t *testing.T) {
	f := lookup(t, "Small")
	if err := f.ReturnErr(); err != nil {
		t.Fatal(err)
	}
	if err := Set([]Change{{Func: f, Entry: func(*Func, *Args) {}, Return: true}}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := Set([]Change{{Func: f}}); err != nil {
			t.Error(err)
		}
	}()
	_, rstub := stubAddrs()
	entryCall := append([]byte(nil), mem(f.site, len(f.orig))...)
	r := f.retSites[0]
	mu.Lock() // returnCall finds a return's pad under mu
	retCall, err := returnCall(r, rstub)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	var h EntryHook = func(*Func, *Args) {}
	cases := []struct {
		name, want     string
		break_, repair func()
	}{
		{"the record's entry off", "the entry hook",
			locked(func() { f.entryOn = false }), locked(func() { f.entryOn = true })},
		{"the record's returns off", "the returns' calls written or not",
			locked(func() { f.retOn = false }), locked(func() { f.retOn = true })},
		{"the entry's call told not written", "the entry's call written or not",
			locked(func() { f.patched = false }), locked(func() { f.patched = true })},
		{"the returns' calls told not written", "the returns' calls written or not",
			locked(func() { f.retPatched = false }), locked(func() { f.retPatched = true })},
		{"the hook flag clear", "the entry hook",
			locked(func() { store64(&f.hookOn, 0) }), locked(func() { store64(&f.hookOn, 1) })},
		{"no hook", "the entry hook",
			locked(func() { f.onEntry.Store(nil) }), locked(func() { f.onEntry.Store(&h) })},
		{"no wish for return events", "the wish for return events",
			locked(func() { store64(&f.wantRet, 0) }), locked(func() { store64(&f.wantRet, 1) })},
		{"the entry's text its own", "the entry's text",
			func() { write(t, f.site, entryCall, f.orig) }, func() { write(t, f.site, f.orig, entryCall) }},
		{"a return's text its own", "a return's text",
			func() { write(t, uintptr(r.Addr), retCall, r.Orig) }, func() { write(t, uintptr(r.Addr), r.Orig, retCall) }},
	}
	for _, c := range cases {
		if _, _, bad := f.State(); bad != "" {
			t.Fatalf("before %s: %s", c.name, bad)
		}
		c.break_()
		entry, ret, bad := f.State()
		c.repair()
		if bad != c.want {
			t.Errorf("%s: State says %q (entry,returns on=%v,%v); want %q", c.name, bad, entry, ret, c.want)
		}
	}
	if entry, ret, bad := f.State(); !entry || !ret || bad != "" {
		t.Fatalf("restored: entry,returns on=%v,%v, %q", entry, ret, bad)
	}
}

// TestStateCatchesLeaf: a leaf's entry is a jump to its slot; State finds a leaf whose
// record says on while its text is its own, or with no slot.
func TestStateCatchesLeaf(t *testing.T) {
	f := lookupLeaf(t, "LeafGlobal")
	onLeaf(t, f, func(*Func, *Args) {})
	jump := append([]byte(nil), mem(f.site, len(f.orig))...)
	if _, _, bad := f.State(); bad != "" {
		t.Fatalf("on: %s", bad)
	}
	mu.Lock()
	slot := f.leaf.slot
	f.leaf.slot = -1
	mu.Unlock()
	_, _, bad := f.State()
	mu.Lock()
	f.leaf.slot = slot
	mu.Unlock()
	if bad != "the leaf's slot" {
		t.Errorf("no slot: State says %q", bad)
	}
	write(t, f.site, jump, f.orig)
	_, _, bad = f.State()
	write(t, f.site, f.orig, jump)
	if bad != "the entry's text" {
		t.Errorf("the leaf's own text: State says %q", bad)
	}
	if _, _, bad := f.State(); bad != "" {
		t.Fatalf("restored: %s", bad)
	}
}

// write replaces old by new at addr, as Set writes the text.
func write(t *testing.T, addr uintptr, old, new []byte) {
	t.Helper()
	if !bytes.Equal(mem(addr, len(old)), old) {
		t.Fatalf("%#x does not hold % x", addr, old)
	}
	if _, err := patch.Apply([]patch.Write{{Addr: addr, Old: old, New: new}}, patch.Options{Protocol: patch.Rendezvous}); err != nil {
		t.Fatal(err)
	}
}

// locked returns fn made to run under mu, as Set changes a function's state.
func locked(fn func()) func() {
	return func() {
		mu.Lock()
		defer mu.Unlock()
		fn()
	}
}
