package sdt

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sdt/internal/bridge"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Consumers are what an enabled fire feeds besides typed handlers: package control's
// traces and aggregations (bridge.Sink). A definition's descriptor holds an atomic
// pointer to an immutable consumers snapshot; the generated fire methods load it once
// per fire and do nothing more when it is nil, so a probe nobody traces or aggregates
// pays one atomic load. Subscribing and unsubscribing rebuild the snapshots of the
// probes concerned (copy on write, under reg.mu).
type consumers struct {
	id    uint32 // the probe's id, as sinks are told
	n     int    // the probe's arguments: every fire's, and their kinds
	kinds bridge.Kinds
	fix   uint8 // the arguments whose raw slots need widening (rawFix)
	sizes [MaxArgs]uint8
	sinks []sinkEntry
	one   bridge.Sink // the only sink, when it takes every fire of the probe
}

type sinkEntry struct {
	s bridge.Sink
	f *filter
}

// filter says which fires of one probe a subscription's spec matched: all of them,
// or those of some sites (by site), and whether unattributed fires count.
type filter struct {
	all   bool
	sites map[*site]bool
	wide  bool
}

func (f *filter) wants(s *site) bool {
	if s == nil {
		return f.wide
	}
	return f.all || f.sites[s]
}

// emit feeds one admitted fire to the consumers, on P pid, to which the caller is
// pinned (admit). s is the fire's site, nil when not attributed; ret the fire call's
// return address; v the fire's arguments, set by setArg.
func (c *consumers) emit(pid int, s *site, ret uintptr, v *firing) {
	var addr uintptr
	if s != nil {
		addr = s.Addr
	}
	c.emitAt(pid, s, addr, ret, v)
}

// emitAt is emit with the address the fire is told to come from: its site's, or
// (a run-time function probe, which has no site) its function's entry.
func (c *consumers) emitAt(pid int, s *site, addr, ret uintptr, v *firing) {
	if c.fix != 0 {
		fixSlots(&v.Args, c.fix, &c.sizes)
	}
	v.P, v.Probe, v.Ret, v.Site = pid, c.id, ret, addr
	// Sinks do not keep v (bridge.Sink): hidden from escape analysis, which cannot
	// see through the interface call, a firing built on the stack stays there.
	f := (*firing)(rt.Noescape(unsafe.Pointer(v)))
	if c.one != nil {
		c.one.Fire(f)
		return
	}
	for i := range c.sinks {
		if c.sinks[i].f.wants(s) {
			c.sinks[i].s.Fire(f)
		}
	}
}

// emitPin delivers an fbt fire, whose hooks run between admitting it and delivering
// it: its arguments are a Call's, and the caller is not pinned.
func (c *consumers) emitPin(s *site, ret uintptr, a *argv) {
	pid := rt.ProcPin()
	v := pFiring(pid)
	if v == nil {
		v = new(firing)
	}
	v.N, v.Kinds, v.Slots = a.N, a.Kinds, a.Slots
	for i := range min(a.N, MaxArgs) {
		if a.Kinds[i] == bridge.String {
			v.Strs[i] = a.Strs[i]
		}
	}
	c.emit(pid, s, ret, v)
	for i := range min(a.N, MaxArgs) {
		if a.Kinds[i] == bridge.String {
			v.Strs[i] = ""
		}
	}
	rt.ProcUnpin()
}

// subscription is one sink attached to the probes a spec matched.
type subscription struct {
	sink    bridge.Sink
	filters map[*probe]*filter
}

// probeID returns p's id, assigning one. Call with r.mu held.
func (r *registry) probeID(p *probe) uint32 {
	if id, ok := r.ids[p]; ok {
		return id
	}
	if r.ids == nil {
		r.ids = map[*probe]uint32{}
	}
	id := uint32(len(r.ids))
	r.ids[p] = id
	return id
}

// matchFilters resolves sp against the registry: per probe, which of its fires
// match, and the description of each probe matched. Call with reg.mu held.
func matchFilters(sp spec.Spec) (map[*probe]*filter, []*probe) {
	reg.resolve()
	out := map[*probe]*filter{}
	var order []*probe
	for _, p := range reg.probes {
		f := &filter{all: true, sites: map[*site]bool{}}
		for _, s := range p.sites {
			if sp.Match(p.provider, s.Module, s.Func, p.name) {
				f.sites[s] = true
			} else {
				f.all = false
			}
		}
		f.wide = sp.Match(p.provider, p.module, p.wideFunc(), p.name) && p.placeable(sp)
		if len(f.sites) == 0 {
			f.all = false
		}
		if f.wide || len(f.sites) > 0 {
			if f.all {
				f.sites = nil
			}
			out[p] = f
			order = append(order, p)
		}
	}
	return out, order
}

// subscribe attaches sink to the fires of what specText matches, and describes them.
func subscribe(specText string, sink bridge.Sink) ([]*bridge.Probe, func(), error) {
	sp, err := parseSpec(specText)
	if err != nil {
		return nil, nil, err
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.resolve()
	refused, err := reg.matchRuntime(sp, specText)
	if err != nil {
		return nil, nil, err
	}
	fs, order := matchFilters(sp)
	if len(fs) == 0 {
		if refused != nil {
			return nil, nil, refused
		}
		return nil, nil, fmt.Errorf("%q: %w", specText, ErrNoMatch)
	}
	descs := make([]*bridge.Probe, len(order))
	for i, p := range order {
		descs[i] = p.describe(reg.probeID(p))
	}
	sub := &subscription{sink: sink, filters: fs}
	reg.subs = append(reg.subs, sub)
	reg.rebuild(fs)
	var once sync.Once
	return descs, func() { once.Do(sub.close) }, nil
}

// describe is what a consumer is told of p. Call with reg.mu held, after resolve.
func (p *probe) describe(id uint32) *bridge.Probe {
	d := &bridge.Probe{ID: id, Provider: p.provider, Name: p.name, Module: p.module, Args: p.args, Types: p.types, Kinds: p.kinds}
	if rf := p.dyn; rf != nil {
		// Its fires carry the function's entry as their site.
		d.Sites = append(d.Sites, bridge.Site{Addr: rf.f.Entry, Module: rf.module, Func: rf.function})
	}
	for _, s := range p.sites {
		d.Sites = append(d.Sites, bridge.Site{Addr: s.Addr, Module: s.Module, Func: s.Func, File: s.File, Line: s.Line})
	}
	return d
}

// close detaches the subscription.
func (sub *subscription) close() {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if i := slices.Index(reg.subs, sub); i >= 0 {
		reg.subs = slices.Delete(reg.subs, i, i+1)
		reg.rebuild(sub.filters)
	}
}

// rebuild publishes new consumer snapshots for the probes in fs. Call with r.mu held.
func (r *registry) rebuild(fs map[*probe]*filter) {
	for p := range fs {
		c := &consumers{id: r.probeID(p), n: len(p.kinds)}
		copy(c.kinds[:], p.kinds)
		copy(c.sizes[:], p.sizes)
		if len(p.sizes) == len(p.kinds) {
			c.fix = rawFix(p.kinds, p.sizes)
		}
		for _, sub := range r.subs {
			if f := sub.filters[p]; f != nil {
				c.sinks = append(c.sinks, sinkEntry{s: sub.sink, f: f})
			}
		}
		switch {
		case len(c.sinks) == 0:
			c = nil
		case len(c.sinks) == 1 && c.sinks[0].f.all && c.sinks[0].f.wide:
			c.one = c.sinks[0].s
		}
		p.cons.Store(c)
		if p.dyn != nil && p == p.dyn.entry {
			// Nobody consumes its events: its calls only count them.
			p.dyn.f.SetQuiet(c == nil)
		}
	}
}
