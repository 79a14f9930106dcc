package sled

import (
	"fmt"
	"strings"

	"github.com/gosdt/gosdt/arch/arm64"
)

// a64Candidate is one ADRP+LDRB flag load whose byte is in data or bss.
type a64Candidate struct {
	entry    uintptr // entry of the function holding it, once matched
	load     arm64.Load
	site     arm64.Site // valid when the load leads to a branch (followErr == nil)
	matchErr error      // why the site is not a verified shape
	fired    bool       // its guarded block calls a fire method with the flag as receiver
	ret      uintptr
	why      string // why the guarded block is not a fire call
}

func discoverARM64(src source, cfg Config) *Table {
	text := src.text
	t := &Table{TextBytes: len(text)}
	if len(text) == 0 {
		t.Reason = "text section not found"
		return t
	}
	var cands []*a64Candidate
	for _, ld := range arm64.Candidates(text, uint64(src.base)) {
		if !src.inData(uintptr(ld.Flag)) {
			continue // noptrdata/noptrbss (write barrier flags and the like): never a probe
		}
		cands = append(cands, &a64Candidate{load: ld})
	}
	t.Candidates = len(cands)

	// As on amd64: each worker proves a contiguous run of candidates with its own
	// walked functions; a fired test that matches is a site at once.
	workers := make([]*funcs[*arm64.Walked], parallelism(len(cands)))
	for i := range workers {
		workers[i] = &funcs[*arm64.Walked]{
			syms: src.syms,
			decode: func(entry uint64, inFunc func(uint64) bool) (*arm64.Walked, uint64, uint64, error) {
				w, err := arm64.WalkFunc(src.mem, entry, inFunc)
				if err != nil {
					return nil, 0, 0, err
				}
				return w, w.Entry, w.End, nil
			},
		}
	}
	sites := make([]*Site, len(cands))
	inParallel(len(workers), len(cands), func(wi, i int) {
		c := cands[i]
		if c.check(workers[wi], src, cfg); c.fired && c.matchErr == nil {
			sites[i] = c.toSite(src, cfg)
		}
	})
	probes := map[uintptr]bool{}
	for i, c := range cands {
		if sites[i] != nil {
			probes[uintptr(c.load.Flag)] = true
		}
	}
	inParallel(len(workers), len(cands), func(wi, i int) {
		c := cands[i]
		if sites[i] != nil || !probes[uintptr(c.load.Flag)] {
			return
		}
		if !c.fired && c.matchErr == nil {
			// A test of a known probe around other code (if p.Enabled() { ... }):
			// a site if it matches the shape; otherwise toSite says why not.
			c.match(workers[wi], src)
		}
		if c.matchErr != nil && c.site.Addr == 0 {
			// The load of a known probe's flag feeds no branch we can see (the value
			// is reused, or tested through other code): nothing to patch, and the
			// code keeps working through whatever it does with the flag. Rejected.
			return
		}
		sites[i] = c.toSite(src, cfg)
	})
	for i, c := range cands {
		if sites[i] != nil {
			t.Sites = append(t.Sites, sites[i])
			continue
		}
		why := c.why
		if c.matchErr != nil {
			why = c.matchErr.Error()
		}
		t.Rejected = append(t.Rejected, Rejection{Addr: uintptr(c.load.Addr), Flag: uintptr(c.load.Flag), Reason: why})
	}
	return t
}

// check proves, cheapest first, that the candidate's byte is tested by a branch that
// guards a call of the fire method on it; only then is its function walked, to check
// the shape against it.
func (c *a64Candidate) check(fns *funcs[*arm64.Walked], src source, cfg Config) {
	var err error
	if c.site, err = arm64.FollowLoad(src.mem, c.load); err != nil {
		c.matchErr = err
		c.why = err.Error()
		return
	}
	pass := func(target uint64) bool { return raceCall(src.syms.name(uintptr(target))) }
	g, err := arm64.GuardedCall(src.mem, c.site.Fire(), pass)
	switch {
	case err != nil:
		c.why = err.Error()
	case !cfg.IsFire(src.syms.name(uintptr(g.Call))):
		c.why = "guarded block calls " + src.syms.name(uintptr(g.Call))
	case g.R0 != c.load.Flag:
		c.why = "fire call's receiver is not the tested flag"
	default:
		c.fired, c.ret = true, uintptr(g.Return)
		c.match(fns, src)
	}
}

// match decodes the function around the a64Candidate (once per function) and checks the
// site against it.
func (c *a64Candidate) match(fns *funcs[*arm64.Walked], src source) error {
	d := fns.at(uintptr(c.load.Addr))
	if d.err != nil {
		c.matchErr = d.err
		return c.matchErr
	}
	c.entry = uintptr(d.lo)
	if c.site.Addr >= d.hi {
		c.matchErr = fmt.Errorf("the branch at %#x is past the end of the function", c.site.Addr)
		return c.matchErr
	}
	c.matchErr = d.w.Match(src.mem, c.site)
	return c.matchErr
}

// toSite turns a a64Candidate on a known probe flag into a site: a verified sled, or the
// reason it keeps its branch check. A sealed site whose flag load could not be proven
// removable keeps the load and says so in its Note.
func (c *a64Candidate) toSite(src source, cfg Config) *Site {
	s := &Site{Addr: uintptr(c.site.Addr), Len: arm64.InstLen, Flag: uintptr(c.load.Flag), Kind: Guard}
	if c.fired {
		s.Kind, s.Return = Fire, c.ret
	}
	defer s.refuseInside(src, c.entry, cfg.ProbePackage)
	s.Orig = src.bytes(s.Addr, s.Len)
	if c.matchErr != nil {
		s.Reason = c.matchErr.Error()
		return s
	}
	sled, err := arm64.Canonical(c.site)
	if err != nil {
		s.Reason = err.Error()
		return s
	}
	s.Off, s.On, s.Toggle = sled.Off, sled.On, sled.Toggle
	call := func(target uint64) arm64.CallEffect { return callEffect(src.syms.name(uintptr(target)), cfg) }
	if err := arm64.LoadDead(src.mem, c.site, call); err != nil {
		s.Note = fmt.Sprintf("flag load at %#x kept (only the branch is patched): %v", c.load.Addr, err)
		return s
	}
	s.Also = []Rewrite{{
		Addr: uintptr(c.load.Addr),
		Orig: src.bytes(uintptr(c.load.Addr), c.load.Len),
		New:  arm64.NOP(c.load.Len),
	}}
	return s
}

// callEffect says what a BL to the function named sym does to a register that holds a
// probe flag. The fire method is an ordinary Go function: nothing survives it. Runtime
// helpers may preserve registers (the write barrier does), so the walk goes on after
// them, except after those that never return.
func callEffect(sym string, cfg Config) arm64.CallEffect {
	switch {
	case cfg.IsFire(sym):
		return arm64.CallKills
	case strings.HasPrefix(sym, "runtime.panic"), strings.HasPrefix(sym, "runtime.goPanic"),
		sym == "runtime.throw", sym == "runtime.gopanic":
		return arm64.CallNoReturn
	}
	return arm64.CallKeeps
}
