package registry

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Consumers are what an enabled fire feeds besides typed handlers: package consume's
// traces and aggregations (Sink). A definition's descriptor holds an atomic
// pointer to an immutable consumers snapshot; the generated fire methods load it once
// per fire and do nothing more when it is nil, so a probe nobody traces or aggregates
// pays one atomic load. Subscribing and unsubscribing rebuild the snapshots of the
// probes concerned (copy on write, under reg.mu).
type Consumers struct {
	id    uint32 // the probe's id, as sinks are told
	N     int    // the probe's arguments: every fire's, and their kinds
	Kinds Kinds
	fix   uint8 // the arguments whose raw slots need widening (rawFix)
	sizes [MaxArgs]uint8
	Sinks []sinkEntry
	one   Sink // the only sink, when it takes every fire of the probe
	// folders fed one argument's value instead of the firing (SubscribeFolds);
	// nil when none, and then Sinks is not empty
	Folds []foldEntry
	// Fold1 is Folds' only entry when the probe has no other consumer: the
	// common folding fire's (sdt's fire calls it without a loop)
	Fold1 *foldEntry
}

// foldEntry is a folder of one argument of a probe's fires, and which fires: all
// of its sites, or those of sites[s.index], and unattributed ones if wide.
type foldEntry struct {
	f     Folder
	t     *FoldTable // f's cells at hand
	Arg   int        // the argument folded
	Kind  Kind       // its kind
	id    uint32
	all   bool
	wide  bool
	one   bool   // the probe's only consumer (Consumers.Fold1): its cells are kept at hand
	sites []bool // by site index; nil with all
}

// Fold gives e the value x of a fire from s (nil: not attributed) on P pid, to
// which the caller is pinned: into its cell at hand if it has one, else to the
// folder, which makes it.
func (e *foldEntry) Fold(pid int, s *site, x int64) {
	if s == nil || !e.all {
		e.foldSome(pid, s, x)
		return
	}
	c := e.t.cell(pid, s.index)
	if c != nil {
		c.Fold(x, e.t)
	} else {
		e.f.Fold(pid, s.index, e.id, s.Addr, x)
		c = e.t.cell(pid, s.index) // made by the folder, or none (past its rows)
	}
	if e.one && c != nil {
		e.keep(pid, s, c)
	}
}

func (e *foldEntry) foldSome(pid int, s *site, x int64) {
	if s == nil {
		if e.wide {
			e.f.Fold(pid, -1, e.id, 0, x)
		}
		return
	}
	if uint(s.index) < uint(len(e.sites)) && e.sites[s.index] {
		e.f.Fold(pid, s.index, e.id, s.Addr, x)
	}
}

// foldArgs folds the arguments of a fire (fbt's, set in a) into each of c's folders.
func (c *Consumers) foldArgs(pid int, s *site, a *Args) {
	for i := range c.Folds {
		e := &c.Folds[i]
		e.Fold(pid, s, SlotInt(e.Kind, a.Slots[e.Arg], len(a.Strs[e.Arg])))
	}
}

type sinkEntry struct {
	s Sink
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

// Emit feeds one admitted fire to the consumers, on P pid, to which the caller is
// pinned (admit). s is the fire's site, nil when not attributed; ret the fire call's
// return address; v the fire's arguments, set by SetArg.
func (c *Consumers) Emit(pid int, s *site, ret uintptr, v *firing) {
	var addr uintptr
	if s != nil {
		addr = s.Addr
	}
	c.emitAt(pid, s, addr, ret, v)
}

// emitAt is emit with the address the fire is told to come from: its site's, or
// (a run-time function probe, which has no site) its function's entry.
func (c *Consumers) emitAt(pid int, s *site, addr, ret uintptr, v *firing) {
	if c.fix != 0 {
		fixSlots(&v.Args, c.fix, &c.sizes)
	}
	v.P, v.Probe, v.Ret, v.Site = pid, c.id, ret, addr
	// Sinks do not keep v (Sink): hidden from escape analysis, which cannot
	// see through the interface call, a firing built on the stack stays there.
	f := (*firing)(rt.Noescape(unsafe.Pointer(v)))
	if c.one != nil {
		c.one.Fire(f)
		return
	}
	for i := range c.Sinks {
		if c.Sinks[i].f.wants(s) {
			c.Sinks[i].s.Fire(f)
		}
	}
}

// EmitPin delivers an fbt fire, whose hooks run between admitting it and delivering
// it: its arguments are a Call's, and the caller is not pinned.
func (c *Consumers) EmitPin(s *site, ret uintptr, a *argv) {
	pid := rt.ProcPin()
	if c.Folds != nil {
		c.foldArgs(pid, s, a)
		if len(c.Sinks) == 0 {
			rt.ProcUnpin()
			return
		}
	}
	v := PFiring(pid)
	if v == nil {
		v = new(firing)
	}
	v.N, v.Kinds, v.Slots = a.N, a.Kinds, a.Slots
	for i := range min(a.N, MaxArgs) {
		if a.Kinds[i] == String {
			v.Strs[i] = a.Strs[i]
		}
	}
	c.Emit(pid, s, ret, v)
	for i := range min(a.N, MaxArgs) {
		if a.Kinds[i] == String {
			v.Strs[i] = ""
		}
	}
	rt.ProcUnpin()
}

// subscription is one sink attached to the probes a spec matched.
type subscription struct {
	sink    Sink
	filters map[*probe]*filter
	counted *counted // a counting subscription: the probes not fed to sink are read so
	// a folding subscription (SubscribeFolds): folder is fed value's value, where
	// the probe has that argument
	folder Folder
	value  string
}

// foldArg is the index and kind of the argument sub folds of p's fires; ok false when
// sub folds none (not a folding subscription, or p has no such argument, or its kind
// only its fires tell, or p is a run-time function probe, whose fires are delivered
// elsewhere).
func (sub *subscription) foldArg(p *probe) (i int, k Kind, ok bool) {
	if sub.folder == nil || p.dyn != nil {
		return 0, 0, false
	}
	i = argIndex(p.args, sub.value)
	if i < 0 || i >= len(p.kinds) || p.kinds[i] == Unknown {
		return 0, 0, false
	}
	return i, p.kinds[i], true
}

// argIndex is the index of the argument name names among args: argN, or its name;
// -1 if none (as package consume names them).
func argIndex(args []string, name string) int {
	if n, ok := strings.CutPrefix(name, "arg"); ok && n != "" && (n == "0" || n[0] != '0') {
		i := 0
		for _, c := range []byte(n) {
			if c < '0' || c > '9' || i > MaxArgs {
				i = -1
				break
			}
			i = 10*i + int(c-'0')
		}
		if i >= 0 && i < MaxArgs {
			if i < len(args) {
				return i
			}
			return -1
		}
	}
	for i, a := range args {
		if a == name {
			return i
		}
	}
	return -1
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

// Subscribe attaches sink to the fires of what specText matches, and describes them.
func Subscribe(specText string, sink Sink) ([]*Probe, func(), error) {
	descs, sub, err := subscribeAs(specText, &subscription{sink: sink})
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return descs, func() { once.Do(sub.close) }, nil
}

// SubscribeCounts subscribes a sink that only counts fires by probe and site
// (its sink fed only the fires counted no such way): a count of a probe with sites, or of its
// unattributed fires, is read from the counters every admitted fire bumps anyway
// (hits.go), so its fires need no consumer at all and cost what an enabled fire
// with nobody consuming costs; a run-time function probe's from fprobe's per-P
// counts (hitsNow), its returns folded where they happen.
func SubscribeCounts(specText string, sink Sink) ([]*Probe, func([]Count) []Count, func(), error) {
	sub := &subscription{sink: sink, counted: &counted{base: map[*site]uint64{}, wideBase: map[*probe]uint64{}}}
	descs, sub, err := subscribeAs(specText, sub)
	if err != nil {
		return nil, nil, nil, err
	}
	var once sync.Once
	return descs, sub.counted.read, func() { once.Do(sub.close) }, nil
}

// subscribeAs attaches sub, its sink set, to what specText matches.
func subscribeAs(specText string, sub *subscription) ([]*Probe, *subscription, error) {
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
	descs := make([]*Probe, len(order))
	for i, p := range order {
		descs[i] = p.describe(reg.probeID(p))
	}
	sub.filters = fs
	if c := sub.counted; c != nil {
		// What was counted before the subscription is not its.
		c.filters = fs
		c.each(func(p *probe, s *site, n uint64) {
			if s != nil {
				c.base[s] = n
			} else {
				c.wideBase[p] = n
			}
		})
	}
	reg.subs = append(reg.subs, sub)
	reg.rebuild(fs)
	return descs, sub, nil
}

// counted is the part of a counting subscription (subscribeCounts) read from the
// registry's counters: the counts when it began, and its last ones once closed.
// Guarded by reg.mu.
type counted struct {
	filters  map[*probe]*filter
	base     map[*site]uint64  // a site's fires before the subscription
	wideBase map[*probe]uint64 // a definition's unattributed fires before it
	final    []Count           // what read gives once closed
	closed   bool
}

// countedBy reports whether c reads p's fires from the counters.
func (c *counted) countedBy(p *probe) bool { return c != nil }

// each calls f with the fires counted so far of each site the subscription matched
// (s nil: a definition's unattributed fires, when it matched them). Call with
// reg.mu held.
func (c *counted) each(f func(p *probe, s *site, n uint64)) {
	for p, fl := range c.filters {
		if !c.countedBy(p) {
			continue
		}
		// p.sites, not the filter's: a filter of all sites takes those bound later too.
		for _, s := range p.sites {
			if fl.all || fl.sites[s] {
				f(p, s, s.hitCount())
			}
		}
		if fl.wide {
			f(p, nil, p.hitsNow())
		}
	}
}

// read appends the fires of each site counted since the subscription began (until
// it was closed), leaving out sites that had none.
func (c *counted) read(dst []Count) []Count {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if c.closed {
		return append(dst, c.final...)
	}
	return c.readLocked(dst)
}

func (c *counted) readLocked(dst []Count) []Count {
	c.each(func(p *probe, s *site, n uint64) {
		var addr uintptr
		if s != nil {
			n -= c.base[s]
			addr = s.Addr
		} else {
			n -= c.wideBase[p]
			addr = p.wideAddr()
		}
		if n > 0 {
			dst = append(dst, Count{Probe: reg.probeID(p), Site: addr, N: n})
		}
	})
	return dst
}

// describe is what a consumer is told of p. Call with reg.mu held, after resolve.
func (p *probe) describe(id uint32) *Probe {
	d := &Probe{ID: id, Provider: p.provider, Name: p.name, Module: p.module, Args: p.args, Types: p.types, Kinds: p.kinds}
	if rf := p.dyn; rf != nil {
		// Its fires carry the function's entry as their site.
		d.Sites = append(d.Sites, Site{Addr: rf.f.Entry, Module: rf.module, Func: rf.function})
	}
	for _, s := range p.sites {
		d.Sites = append(d.Sites, Site{Addr: s.Addr, Module: s.Module, Func: s.Func, File: s.File, Line: s.Line})
	}
	return d
}

// close detaches the subscription.
func (sub *subscription) close() {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if i := slices.Index(reg.subs, sub); i >= 0 {
		reg.subs = slices.Delete(reg.subs, i, i+1)
		if sub.folder != nil {
			reg.renewAtHand()
		}
		reg.rebuild(sub.filters)
	}
	if c := sub.counted; c != nil && !c.closed {
		c.final, c.closed = c.readLocked(nil), true
	}
}

// rebuild publishes new consumer snapshots for the probes in fs. Call with r.mu held.
func (r *registry) rebuild(fs map[*probe]*filter) {
	for p := range fs {
		c := &Consumers{id: r.probeID(p), N: len(p.kinds)}
		copy(c.Kinds[:], p.kinds)
		copy(c.sizes[:], p.sizes)
		if len(p.sizes) == len(p.kinds) {
			c.fix = rawFix(p.kinds, p.sizes)
		}
		for _, sub := range r.subs {
			f := sub.filters[p]
			if f == nil || sub.counted.countedBy(p) {
				continue
			}
			if i, k, ok := sub.foldArg(p); ok {
				e := foldEntry{f: sub.folder, t: sub.folder.FoldTable(), Arg: i, Kind: k, id: c.id, all: f.all, wide: f.wide}
				if !f.all {
					e.sites = make([]bool, len(r.sites))
					for s := range f.sites {
						e.sites[s.index] = true
					}
				}
				c.Folds = append(c.Folds, e)
				continue
			}
			c.Sinks = append(c.Sinks, sinkEntry{s: sub.sink, f: f})
		}
		switch {
		case len(c.Sinks) == 0 && len(c.Folds) == 0:
			c = nil
		case len(c.Sinks) == 0 && len(c.Folds) == 1:
			c.Fold1 = &c.Folds[0]
			c.Fold1.one = true
			if !haveAtHand() {
				r.renewAtHand()
			}
		case len(c.Sinks) == 1 && c.Sinks[0].f.all && c.Sinks[0].f.wide:
			c.one = c.Sinks[0].s
		}
		p.cons.Store(c)
		p.consumed(c)
	}
}
