package registry

import (
	"bytes"
	"fmt"
)

// "On" is kept in four places, and they agree whenever reg.mu is free:
//
//   - a site's owners: who holds it on (holdLocked);
//   - site.on: whether its fires are delivered (admit reads it without a lock);
//   - the site's text: a Patchable site's toggle holds its enabled form;
//   - the flag byte of each of the definition's variables: 1 when the definition is on
//     as a whole (wide) or any of its sites is on, so that a site the matcher left
//     with its branch check fires when some other site of the probe is on.
//
// and a definition's wideOwners likewise say probe.wide. A run-time function probe has
// no site and no flag byte: package fprobe keeps its function's state (entry and
// return on, their calls written, the flags its stubs read, under fprobe's lock),
// which the registry drives and never writes: its entry probe's wide is fprobe's entry
// on, its return probe's wide fprobe's returns on, and while one return probe is on
// a goroutine delivers return events (draining). checkOn compares all of it, the text
// of every entry and return included (fprobe.Func.State).
//
// Who writes them: after the registry's initialisation only switchLocked changes the
// last three, in one order that keeps every fire safe while it does: enabling sets on
// and the flags, then writes the text; disabling writes the text, then clears them.
// Owners change only in holdLocked, which switches exactly the keys whose first holder
// came or last holder went, and undoes its bookkeeping when the patch fails. Two
// writers come before any of it, with the start owner of SDT_MODE=on or sdtctl's
// follow mode (startOwner): the initialisation (init.go), which seals every site in
// its enabled form, sets on and gives it that owner before any site can run; and
// DefineIn (probe.go), which makes a definition on as a whole for that owner, its
// flag byte 1, before the definition is returned to anyone.
//
// Locks: reg.mu is the registry's one lock, for definitions, sites, owners and the
// consumers' subscriptions alike; fires take none. fprobe.Set, called under reg.mu,
// takes fprobe's own, inside it: never the other way round.

// checkSwitches makes every switch verify the invariant afterwards (the package's
// tests set it); a violation panics, naming it.
var checkSwitches bool

// checkOn returns the first disagreement between the four representations of "on",
// or nil. Call with reg.mu held.
func (r *registry) checkOn() error {
	for _, s := range r.sites {
		on := s.on.Load()
		if held := len(s.owners) > 0; held != on {
			return fmt.Errorf("site %#x (%s): %d owners, but on=%v", s.Addr, s.Func, len(s.owners), on)
		}
		if s.Patchable() {
			off, enabled := s.Switch()
			want := off
			if on {
				want = enabled
			}
			if got := textAt(s.Addr+uintptr(s.ToggleAt), len(want)); !bytes.Equal(got, want) {
				return fmt.Errorf("site %#x (%s): on=%v, but its toggle holds % x, not % x", s.Addr, s.Func, on, got, want)
			}
		}
	}
	for _, p := range r.probes {
		wide := p.wide.Load()
		if held := len(p.wideOwners) > 0; held != wide {
			return fmt.Errorf("%s:%s: %d owners as a whole, but wide=%v", p.provider, p.name, len(p.wideOwners), wide)
		}
		on := wide
		for _, s := range p.sites {
			on = on || s.on.Load()
		}
		for _, h := range p.heads {
			if (h.On != 0) != on {
				return fmt.Errorf("%s:%s: flag byte %d, but on=%v (wide=%v or a site on)", p.provider, p.name, h.On, on, wide)
			}
		}
	}
	anyRet := false
	for name, rf := range r.runtime {
		entry, ret, bad := rf.f.State()
		if bad != "" {
			return fmt.Errorf("%s: fprobe's state disagrees with its entry,returns on=%v,%v: %s", name, entry, ret, bad)
		}
		if entry != rf.entry.wide.Load() {
			return fmt.Errorf("%s: entry probe on=%v, but fprobe has its entry on=%v", name, rf.entry.wide.Load(), entry)
		}
		if ret != rf.ret.wide.Load() {
			return fmt.Errorf("%s: return probe on=%v, but fprobe has its returns on=%v", name, rf.ret.wide.Load(), ret)
		}
		anyRet = anyRet || ret
	}
	if anyRet && !r.draining {
		return fmt.Errorf("a return probe is on, but no goroutine delivers return events")
	}
	return nil
}

// mustAgree panics when the invariant does not hold after switching for what.
func (r *registry) mustAgree(what string) {
	if err := r.checkOn(); err != nil {
		panic(fmt.Sprintf("sdt: after switching for %q: %v", what, err))
	}
}
