package sled

import (
	"encoding/binary"
	"fmt"

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
	text, mem := src.text, src.mem
	t := &Table{TextBytes: len(text)}
	if len(text) == 0 {
		t.Reason = "text section not found"
		return t
	}
	fns := &funcs[amd64.Inst]{
		syms: src.syms,
		decode: func(entry uint64, inFunc func(uint64) bool) ([]amd64.Inst, error) {
			return amd64.DecodeFunc(mem, entry, 0, inFunc)
		},
		targets: amd64.BranchTargets,
		extent:  func(is []amd64.Inst) (uint64, uint64) { return is[0].PC, is[len(is)-1].End() },
	}
	pass := func(target uint64) bool { return raceCall(src.syms.name(uintptr(target))) }

	var cands []*x86Candidate
	probes := map[uintptr]bool{}
	for _, off := range amd64.Candidates(text) {
		addr := src.base + uintptr(off)
		rel := int32(binary.LittleEndian.Uint32(text[off+2:]))
		flag := uintptr(int64(addr) + 7 + int64(rel))
		if !src.inData(flag) {
			continue // noptrdata/noptrbss (write barrier flags and the like): never a probe
		}
		t.Candidates++
		c := &x86Candidate{addr: addr, flag: flag}
		cands = append(cands, c)
		// Cheap first: does the check guard a fire call? Only then is the whole
		// function decoded, to prove the match sits on instruction boundaries.
		fire, err := localFire(src, addr)
		if err != nil {
			c.why = err.Error()
			continue
		}
		g, err := amd64.GuardedCall(mem, fire, pass)
		switch {
		case err != nil:
			c.why = err.Error()
		case !cfg.IsFire(src.syms.name(uintptr(g.Call))):
			c.why = "guarded block calls " + src.syms.name(uintptr(g.Call))
		case !contains(g.Leas, uint64(flag)):
			c.why = "fire call's receiver is not the compared flag"
		default:
			c.fired, c.ret = true, uintptr(g.Return)
			if c.match(fns, src) == nil {
				probes[flag] = true
			}
		}
	}

	for _, c := range cands {
		if !probes[c.flag] {
			why := c.why
			if c.matchErr != nil {
				why = c.matchErr.Error()
			}
			t.Rejected = append(t.Rejected, Rejection{Addr: c.addr, Flag: c.flag, Reason: why})
			continue
		}
		if !c.fired {
			// A check of a known probe around other code (if p.Enabled() { ... }):
			// a site if it matches the shape; otherwise toSite says why not.
			c.match(fns, src)
		}
		t.Sites = append(t.Sites, c.toSite(src, cfg.ProbePackage))
	}
	return t
}

// match decodes the function around the x86Candidate (once per function) and matches the
// site shape on its instruction boundaries.
func (c *x86Candidate) match(fns *funcs[amd64.Inst], src source) error {
	d := fns.at(c.addr)
	if d.err != nil {
		c.matchErr = d.err
		return c.matchErr
	}
	c.entry = uintptr(d.insts[0].PC)
	i, ok := amd64.Index(d.insts, uint64(c.addr))
	if !ok {
		c.matchErr = fmt.Errorf("not on an instruction boundary")
		return c.matchErr
	}
	c.site, c.matchErr = amd64.MatchSite(d.insts, i, d.targets)
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
