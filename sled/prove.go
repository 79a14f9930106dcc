package sled

import (
	"fmt"
	"slices"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/spec"
)

// candidate is one check found by the search, and what its proof found so far.
type candidate struct {
	site      arch.Site // followed from its Check; Addr 0 when the check leads to no site
	followErr error     // why the code after the check is not a site's
	fired     bool      // its guarded block calls a fire method with the flag as receiver
	ret       uint64    // that call's return address
	why       string    // why the guarded block is not a fire call
	entry     uint64    // entry of the function holding it, once walked
	matchErr  error     // why the site does not match its function
}

// prover is what one goroutine of discovery proves candidates with.
type prover struct {
	a     *arch.Arch
	src   Source     // its Mem is mem
	mem   arch.Cache // remembers one candidate's decoded instructions
	fns   funcs
	names map[uint64]string // functions called from guarded blocks, by entry
}

func newProver(a *arch.Arch, src Source) prover {
	mem := a.NewCache(src.Mem)
	src.Mem = mem
	return prover{a: a, src: src, mem: mem, fns: funcs{a: a, mem: mem, syms: src.Syms}}
}

// name names the function at pc, a call's target: the few that guarded blocks call
// (fire methods, race hooks) are asked for at every site.
func (w *prover) name(pc uint64) string {
	n, ok := w.names[pc]
	if !ok {
		if w.names == nil {
			w.names = map[uint64]string{}
		}
		n = w.src.Syms.Name(pc)
		w.names[pc] = n
	}
	return n
}

// check follows the candidate to its site and proves, cheapest first, that it guards
// a call of the fire method on its flag; only then is its function walked, to prove
// the match on instruction boundaries.
func (w *prover) check(c *candidate) {
	c.site, c.followErr = w.a.Follow(w.mem, c.site.Check)
	if c.followErr != nil {
		c.why = c.followErr.Error()
		return
	}
	pass := func(target uint64) bool { return raceCall(w.name(target)) }
	g, err := w.a.GuardedCall(w.mem, c.site.Fire(), pass)
	switch {
	case err != nil:
		c.why = err.Error()
	case !IsFire(w.name(g.Call)):
		c.why = "guarded block calls " + w.name(g.Call)
	case !slices.Contains(g.Receivers, c.site.Check.Flag):
		c.why = "fire call's receiver is not the flag the site tests"
	default:
		c.fired, c.ret = true, g.Return
		w.match(c)
	}
}

// match walks the function around the candidate (once per function) and matches the
// site against it.
func (w *prover) match(c *candidate) {
	d := w.fns.at(c.site.Check.Addr)
	if d.err != nil {
		c.matchErr = d.err
		return
	}
	c.entry = d.entry
	if c.site.Addr >= d.w.End {
		c.matchErr = fmt.Errorf("the branch at %#x is past the end of the function", c.site.Addr)
		return
	}
	c.matchErr = w.a.Match(w.mem, d.w, c.site)
}

// site turns a candidate on a known probe's flag into a site: its sled, or the reason
// it keeps its branch check.
func (w *prover) site(c *candidate) Site {
	s := Site{Addr: uintptr(c.site.Addr), Len: c.site.Len, Flag: uintptr(c.site.Check.Flag), Kind: Guard, syms: w.src.Syms}
	if c.fired {
		s.Kind, s.Return = Fire, uintptr(c.ret)
	}
	s.Orig = w.src.bytes(c.site.Addr, c.site.Len)
	err := c.followErr
	if err == nil {
		err = c.matchErr
	}
	var sl arch.Sled
	if err == nil {
		sl, err = w.a.Seal(w.mem, c.site, func(target uint64) arch.CallEffect { return callEffect(w.name(target)) })
	}
	if err != nil {
		s.Refusal = refused(Unproven, err.Error())
		return s
	}
	if mod, _ := spec.SplitFunc(w.src.Syms.Name(c.entry)); c.entry != 0 && IsProbePackage(mod) {
		// No user code is ever inlined into the probe package's functions, so its
		// outermost function being there means no frame of the inline tree is the user's.
		s.Refusal = refused(InProbePackage, "check inside package "+probePackage+" itself (Probe body not inlined, as with -gcflags=-l): patching it would switch every probe of that shape")
		return s
	}
	s.Off, s.On, s.ToggleAt, s.Toggle, s.Note = sl.Off, sl.On, sl.At, sl.Toggle, sl.Note
	for _, p := range sl.Also {
		s.Also = append(s.Also, Rewrite{Addr: uintptr(p.Addr), Orig: w.src.bytes(p.Addr, len(p.New)), New: p.New})
	}
	return s
}
