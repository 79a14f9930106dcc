package registry

import (
	"fmt"
	"slices"

	"github.com/gosdt/gosdt/sdt/internal/fprobe"
)

// What package sdt's tests (its export_test.go) reach of the registry's insides:
// probes with sites are defined only there, by sdt's probe types, whose fire methods
// discovery knows.

// CheckSwitches makes every switch verify the invariant of "on" afterwards, and
// panic naming a violation (tests).
func CheckSwitches() { afterSwitch = (*registry).mustAgree }

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

// RuntimeBreakage is one record of a run-time function probe a test breaks
// (CheckBrokenRuntime).
type RuntimeBreakage int

const (
	RuntimeNobody  RuntimeBreakage = iota // fprobe has the probe on, but nobody holds it
	RuntimeCopy                           // the registry keeps wide of its own for it
	RuntimeQuiet                          // fprobe's quiet flag says the opposite of its consumers
	RuntimeNoDrain                        // a return probe on, and no drain running
)

// CheckBrokenRuntime breaks b for the entry probe (or, ret, the return probe) of the
// run-time probed function fn, which is on, runs the checker, and restores what it
// broke; ok is false when fn has no run-time probes.
func CheckBrokenRuntime(fn string, ret bool, b RuntimeBreakage) (err error, ok bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	rf := reg.runtime[fn]
	if rf == nil {
		return nil, false
	}
	p, setQuiet := rf.entry, rf.f.SetQuiet
	if ret {
		p, setQuiet = rf.ret, rf.f.SetReturnQuiet
	}
	switch b {
	case RuntimeNobody:
		saved := p.wideOwners
		p.wideOwners = nil
		err = reg.checkOn()
		p.wideOwners = saved
	case RuntimeCopy:
		p.wide.Store(true)
		err = reg.checkOn()
		p.wide.Store(false)
	case RuntimeQuiet:
		quiet := p.cons.Load() == nil
		setQuiet(!quiet)
		err = reg.checkOn()
		setQuiet(quiet)
	case RuntimeNoDrain:
		saved := reg.draining
		reg.draining = false
		err = reg.checkOn()
		reg.draining = saved
	}
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

// ReturnArgs is the Args the drain delivers for a run-time return whose latency is
// lat and result words w, its results read as results say (returnArgs), for tests
// that hold the return path's predicates (fprobe.Pred) against package pred's Match.
func ReturnArgs(results []fprobe.DirectArg, lat int64, w [fprobe.ReturnWords]uint64) *Args {
	l := make([]wordArg, len(results))
	for i, r := range results {
		l[i] = wordArg{word: int(r.Word), kind: Kind(r.Kind), size: r.Size, iface: r.Iface}
	}
	v := new(Args)
	returnArgs(v, l, lat, &w)
	return v
}
