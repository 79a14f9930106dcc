package registry

import (
	"fmt"
	"slices"
)

// What package sdt's tests (its export_test.go) reach of the registry's insides:
// probes with sites are defined only there, by sdt's probe types, whose fire methods
// discovery knows.

// CheckSwitches makes every switch verify the invariant of "on" afterwards, and
// panic naming a violation (tests).
func CheckSwitches() { checkSwitches = true }

// CheckOn verifies the invariant of "on" now.
func CheckOn() error {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.checkOn()
}

// Breakage is one representation of "on" a test breaks (CheckBroken).
type Breakage int

const (
	SiteOff    Breakage = iota // a site held on whose on is false
	SiteNobody                 // a site on that nobody holds
	FlagClear                  // the flag byte clear while a site is on
)

// CheckBroken breaks b on the first patchable site of the definition provider:name,
// which is on, runs the checker, and restores what it broke; ok is false when the
// definition has no patchable site (then only FlagClear is tried).
func CheckBroken(provider, name string, b Breakage) (err error, ok bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	ps := reg.byName[provider+":"+name]
	if len(ps) != 1 || len(ps[0].heads) == 0 {
		return fmt.Errorf("%s:%s: want one located definition, have %d", provider, name, len(ps)), false
	}
	p := ps[0]
	var s *site
	for _, x := range p.sites {
		if x.Patchable() {
			s = x
		}
	}
	if s == nil && b != FlagClear {
		return nil, false
	}
	saved := slices.Clone(p.wideOwners)
	switch b {
	case SiteOff:
		s.on.Store(false)
		err = reg.checkOn()
		s.on.Store(true)
	case SiteNobody:
		owners := s.owners
		s.owners, p.wideOwners = nil, nil
		err = reg.checkOn()
		s.owners = owners
	case FlagClear:
		h := p.heads[0]
		on := h.On != 0
		setFlag(h, false)
		err = reg.checkOn()
		setFlag(h, on)
	}
	p.wideOwners = saved
	return err, true
}

// CheckBrokenRuntime flips the registry's record of the entry probe (or, ret, the
// return probe) of the run-time probed function fn, runs the checker, and restores
// it; ok is false when fn has no run-time probes.
func CheckBrokenRuntime(fn string, ret bool) (err error, ok bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	rf := reg.runtime[fn]
	if rf == nil {
		return nil, false
	}
	p := rf.entry
	if ret {
		p = rf.ret
	}
	p.wide.Store(!p.wide.Load())
	saved := p.wideOwners
	if p.wide.Load() {
		p.wideOwners = []*owner{programOwner} // the owners agree: only fprobe's state does not
	} else {
		p.wideOwners = nil
	}
	err = reg.checkOn()
	p.wide.Store(!p.wide.Load())
	p.wideOwners = saved
	return err, true
}

// ToggleLayout is where a patchable site's run-time switch writes.
type ToggleLayout struct {
	Func   string  // the function holding it
	Addr   uintptr // the site
	At     int     // offset of the toggle in the sled
	Toggle int     // its length
	Off    []byte  // the disabled sled
}

// ToggleLayouts returns the layout of every patchable site of the probes provider
// defines, for tests that check what one switch writes.
func ToggleLayouts(provider string) []ToggleLayout {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.resolve()
	var out []ToggleLayout
	for _, p := range reg.probes {
		if p.provider != provider {
			continue
		}
		for _, s := range p.sites {
			if s.Patchable() {
				out = append(out, ToggleLayout{s.Func, s.Addr, s.ToggleAt, s.Toggle, s.Off})
			}
		}
	}
	return out
}

// Consumed reports whether a sink is fed the fires of the definition provider:name.
func Consumed(provider, name string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, p := range reg.byName[provider+":"+name] {
		if p.cons.Load() != nil {
			return true
		}
	}
	return false
}
