package registry

import (
	"bytes"
	"fmt"
)

// "On" is kept in four places, and they agree whenever reg.mu is free:
//
//   - a site's owners: who holds it on;
//   - site.on: whether its fires are delivered (admit reads it without a lock);
//   - the site's text: a Patchable site's toggle holds its enabled form;
//   - the flag byte of each of the definition's variables: 1 when the definition is on
//     as a whole (wide) or any of its sites is on, so that a site the matcher left
//     with its branch check fires when some other site of the probe is on.
//
// and a definition's wideOwners likewise say probe.wide. A run-time function probe has
// no site, no flag byte and no wide of the registry's: whether its entry and its
// returns are on has one record, package fprobe's (Func.On, under fprobe's lock),
// which fprobe.Set alone writes, with the text and the flags its stubs read; the
// registry reads it (probe.wholeOn) and keeps its owners (wideOwners), who hold it
// on exactly when fprobe says it is. Beside it the registry keeps, under reg.mu, two
// facts of its own that follow it: whether anybody consumes the probe's events
// (probe.cons, which fprobe's quiet flags mirror: the registry alone writes them, quiet
// when it makes the probes, then in rebuild with cons) and whether a goroutine
// delivers return events (draining: while any return probe is on). checkOn
// compares all of it, the text of every entry and return included (fprobe.Func.State).
//
// Who writes them: after the registry's initialisation only switchLocked changes
// site.on, the text and the flag bytes, and, through fprobe.Set, a run-time probe's
// state; in one order that keeps every fire safe while it does: enabling sets on and
// the flags, then writes the text; disabling writes the text, then clears them
// (fprobe.Set keeps the same order for its hooks and flags). Owners change only in
// holdLocked, which switches exactly the keys whose first holder came or last holder
// went, and undoes its bookkeeping when the patch fails. Two writers come before any
// of it, with the start owner of SDT_MODE=on or sdtctl's follow mode (startOwner):
// the initialisation (init.go), which seals every site in its enabled form, sets on
// and gives it that owner before any site can run; and DefineIn (probe.go), which
// makes a definition on as a whole for that owner, its flag byte 1, before the
// definition is returned to anyone. The checker's own tests (testsupport.go) break
// one representation under reg.mu and restore it before they unlock.
//
// Locks: reg.mu is the registry's one lock, for definitions, sites, owners and the
// consumers' subscriptions alike; fires take none. fprobe's lock guards its record
// of every function; the registry calls fprobe.Set and Func.On only under reg.mu,
// so the order is reg.mu, then fprobe's: never the other way round (fprobe calls
// the registry's hooks and drain only from probed calls, holding no lock).

// afterSwitch, when set, runs after every switch (holdLocked) with reg.mu held:
// CheckSwitches (tests) sets it to mustAgree, so that a violation panics, naming it.
// A func variable, not a bool: nothing else calls the checker, so a program that does
// not set it links none of it.
var afterSwitch func(r *registry, what string)

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
		if p.dyn != nil && p.wide.Load() {
			return fmt.Errorf("%s: wide=true in the registry, whose run-time probes' state is fprobe's alone", p.label())
		}
		wide := p.wholeOn()
		if held := len(p.wideOwners) > 0; held != wide {
			return fmt.Errorf("%s: %d owners as a whole, but wide=%v", p.label(), len(p.wideOwners), wide)
		}
		on := wide
		for _, s := range p.sites {
			on = on || s.on.Load()
		}
		for _, h := range p.heads {
			if (h.On != 0) != on {
				return fmt.Errorf("%s: flag byte %d, but on=%v (wide=%v or a site on)", p.label(), h.On, on, wide)
			}
		}
	}
	anyRet := false
	for name, rf := range r.runtime {
		entry, ret, bad := rf.f.State()
		if bad != "" {
			return fmt.Errorf("%s: fprobe's record says entry,returns on=%v,%v, but %s disagrees", name, entry, ret, bad)
		}
		eq, rq := rf.f.Quiet()
		if ec := rf.entry.cons.Load() != nil; eq == ec {
			return fmt.Errorf("%s: entry events quiet=%v, but consumed=%v", name, eq, ec)
		}
		if rc := rf.ret.cons.Load() != nil; rq == rc {
			return fmt.Errorf("%s: returns quiet=%v, but consumed=%v", name, rq, rc)
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

// label names p in the checker's errors: a run-time probe by its function.
func (p *probe) label() string {
	if rf := p.dyn; rf != nil {
		return p.provider + ":" + rf.module + ":" + rf.function + ":" + p.name
	}
	return p.provider + ":" + p.name
}
