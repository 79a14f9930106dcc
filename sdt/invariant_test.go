package sdt

import (
	"strings"
	"testing"
)

var invariantTick = Define1[int]("invarianttest", "tick", "i")

//go:noinline
func invariantSite(i int) { Probe1(&invariantTick, i) }

// TestCheckOnCatches: the invariant checker that every switch in these tests runs
// reports each kind of disagreement, so that its silence after a switch means
// something.
func TestCheckOnCatches(t *testing.T) {
	const spec = "invarianttest:::tick"
	NeedSwitchable(t, spec)
	invariantSite(0)
	if _, err := Enable(spec); err != nil {
		t.Fatal(err)
	}
	defer Disable(spec)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if err := reg.checkOn(); err != nil {
		t.Fatalf("after Enable: %v", err)
	}
	p := invariantTick.core
	var s *site
	for _, x := range p.sites {
		if x.Patchable() {
			s = x
		}
	}
	breakages := []struct {
		name, want string
		do, undo   func()
	}{
		{"a site off while held", "owners, but on=false",
			func() { s.on.Store(false) }, func() { s.on.Store(true) }},
		{"a site on held by nobody", "0 owners, but on=true",
			func() { s.owners, p.wideOwners = nil, nil }, func() { s.owners = []*owner{programOwner} }},
		{"the flag byte clear while a site is on", "flag byte 0",
			func() { setFlag(&invariantTick.head, false) }, func() { setFlag(&invariantTick.head, true) }},
	}
	for _, b := range breakages {
		if s == nil && strings.HasPrefix(b.name, "a site") {
			continue // no patchable site here (the branch check only): nothing to break
		}
		saved := append([]*owner(nil), p.wideOwners...)
		b.do()
		err := reg.checkOn()
		b.undo()
		p.wideOwners = saved
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: checkOn says %v; want %q", b.name, err, b.want)
		}
	}
	if err := reg.checkOn(); err != nil {
		t.Fatalf("restored: %v", err)
	}
}
