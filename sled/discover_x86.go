package sled

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/gosdt/gosdt/arch/amd64"
	"golang.org/x/arch/x86/x86asm"
)

// x86Candidate is one CMPB $0, X(SB) whose X is in data or bss.
type x86Candidate struct {
	entry      uintptr // entry of the function holding it, once matched
	addr, flag uintptr
	site       amd64.Site // valid when matchErr == nil
	matchErr   error
	fired      bool // its guarded block calls a fire method with X as receiver
	ret        uintptr
	why        string // why the guarded block is not a fire call
}

func discoverAMD64(src source, cfg Config) *Table {
	text := src.text
	t := &Table{TextBytes: len(text)}
	if len(text) == 0 {
		t.Reason = "text section not found"
		return t
	}
	// The search reads the whole text, which takes most of discovery's time in a
	// large program with few sites: each core searches its part.
	parts := make([][]*x86Candidate, scanParallelism(len(text)))
	inParallel(len(parts), len(parts), func(_, p int) {
		lo, hi := p*len(text)/len(parts), (p+1)*len(text)/len(parts)
		for _, off := range amd64.CandidatesIn(text, lo, hi) {
			addr := src.base + uintptr(off)
			rel := int32(binary.LittleEndian.Uint32(text[off+2:]))
			flag := uintptr(int64(addr) + 7 + int64(rel))
			if !src.inData(flag) {
				continue // noptrdata/noptrbss (write barrier flags and the like): never a probe
			}
			parts[p] = append(parts[p], &x86Candidate{addr: addr, flag: flag})
		}
	})
	cands := slices.Concat(parts...)
	t.Candidates = len(cands)

	// Each worker proves a contiguous run of candidates, with its own decoded
	// functions and instruction cache: candidates in one function go to one worker.
	workers := make([]x86Worker, parallelism(len(cands)))
	for i := range workers {
		w := &workers[i]
		w.src, w.cache = src, amd64.NewCache(src.mem)
		w.src.mem = w.cache
		walker := new(amd64.Walker)
		w.fns = &funcs[*amd64.Walked]{
			syms: src.syms,
			decode: func(entry uint64, inFunc func(uint64) bool) (*amd64.Walked, uint64, uint64, error) {
				wk, err := walker.Walk(src.mem, entry, inFunc)
				return wk, wk.Entry, wk.End, err
			},
		}
	}
	// A fired check that matches the site shape makes its flag a probe's: it is a site,
	// proven at once while its instructions are in the worker's cache.
	sites := make([]*Site, len(cands))
	inParallel(len(workers), len(cands), func(wi, i int) {
		c, w := cands[i], &workers[wi]
		w.cache.Reset()
		if c.check(w, cfg); c.fired && c.matchErr == nil {
			sites[i] = c.toSite(w.src, cfg.ProbePackage)
		}
	})
	probes := map[uintptr]bool{}
	for i, c := range cands {
		if sites[i] != nil {
			probes[c.flag] = true
		}
	}
	inParallel(len(workers), len(cands), func(wi, i int) {
		c, w := cands[i], &workers[wi]
		if sites[i] != nil || !probes[c.flag] {
			return
		}
		w.cache.Reset()
		if !c.fired {
			// A check of a known probe around other code (if p.Enabled() { ... }):
			// a site if it matches the shape; otherwise toSite says why not.
			c.match(w.fns, w.src)
		}
		sites[i] = c.toSite(w.src, cfg.ProbePackage)
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
		t.Rejected = append(t.Rejected, Rejection{Addr: c.addr, Flag: c.flag, Reason: why})
	}
	return t
}

// x86Worker is what one goroutine of discovery reads through: a source whose memory
// caches decoded instructions, and the functions it has walked.
type x86Worker struct {
	src   source // its mem is cache
	cache *amd64.Cache
	fns   *funcs[*amd64.Walked]
	names map[uintptr]string // functions called from guarded blocks, by entry
}

// name names the function at pc, a call's target: the few that guarded blocks call
// (fire methods, race hooks) are asked for at every site.
func (w *x86Worker) name(pc uintptr) string {
	n, ok := w.names[pc]
	if !ok {
		if w.names == nil {
			w.names = map[uintptr]string{}
		}
		n = w.src.syms.name(pc)
		w.names[pc] = n
	}
	return n
}

// check reads the candidate's check as a site and proves, cheapest first, that it
// guards a call of the fire method on its flag; only then is its function walked, to
// prove the match sits on instruction boundaries.
func (c *x86Candidate) check(w *x86Worker, cfg Config) {
	src := w.src
	fire, err := localFire(src, c.addr)
	if err != nil {
		c.why = err.Error()
		return
	}
	pass := func(target uint64) bool { return raceCall(w.name(uintptr(target))) }
	g, err := amd64.GuardedCall(src.mem, fire, pass)
	switch {
	case err != nil:
		c.why = err.Error()
	case !cfg.IsFire(w.name(uintptr(g.Call))):
		c.why = "guarded block calls " + w.name(uintptr(g.Call))
	case !contains(g.Leas, uint64(c.flag)):
		c.why = "fire call's receiver is not the compared flag"
	default:
		c.fired, c.ret = true, uintptr(g.Return)
		c.match(w.fns, src)
	}
}

// match walks the function around the x86Candidate (once per function) and matches the
// site shape on its instruction boundaries, against every branch target in it.
func (c *x86Candidate) match(fns *funcs[*amd64.Walked], src source) error {
	d := fns.at(c.addr)
	if d.err != nil {
		c.matchErr = d.err
		return c.matchErr
	}
	c.entry = uintptr(d.lo)
	if !d.w.IsStart(uint64(c.addr)) {
		c.matchErr = fmt.Errorf("not on an instruction boundary")
		return c.matchErr
	}
	c.site, c.matchErr = d.w.Match(src.mem, uint64(c.addr))
	return c.matchErr
}

// localFire reads the check at addr as if it were a site (CMPB, NOPs, JE or JNE) and
// returns where its fire block starts. It decodes from addr, which may not be an
// instruction boundary: match proves that later, for the few candidates that pass.
func localFire(src source, addr uintptr) (uint64, error) {
	pc := uint64(addr) + 7
	for range 8 {
		in, err := amd64.Decode(src.mem, pc)
		if err != nil {
			return 0, err
		}
		switch in.Op {
		case x86asm.NOP:
			pc += uint64(in.Len)
			continue
		case x86asm.JE:
			return in.End(), nil
		case x86asm.JNE:
			return in.Target, nil
		}
		return 0, fmt.Errorf("%v after the compare, not a JE or JNE", in.Op)
	}
	return 0, fmt.Errorf("too much padding after the compare")
}

// toSite turns a x86Candidate on a known probe flag into a site: a verified sled, or the
// reason it keeps its branch check.
func (c *x86Candidate) toSite(src source, probePkg string) *Site {
	s := &Site{Addr: c.addr, Flag: c.flag, Kind: Guard}
	if c.fired {
		s.Kind, s.Return = Fire, c.ret
	}
	defer s.refuseInside(src, c.entry, probePkg)
	if c.matchErr != nil {
		s.Reason = c.matchErr.Error()
		s.Len = 7
		s.Orig = src.bytes(c.addr, s.Len)
		return s
	}
	s.Len = c.site.Len
	s.Orig = src.bytes(c.addr, s.Len)
	for _, pc := range []uint64{c.site.Fire(), c.site.Skip()} {
		if err := amd64.FlagsDead(src.mem, pc); err != nil {
			s.Reason = fmt.Sprintf("flags may be live at %#x: %v", pc, err)
			return s
		}
	}
	sled, err := amd64.Canonical(c.site)
	if err != nil {
		s.Reason = err.Error()
		return s
	}
	s.Off, s.On, s.ToggleAt, s.Toggle = sled.Off, sled.On, sled.At, sled.Toggle
	return s
}

func contains(xs []uint64, x uint64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
