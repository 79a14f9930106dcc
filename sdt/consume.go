package sdt

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gosdt/gosdt/internal/spec"
)

// Consumers are what an enabled fire feeds besides typed handlers: the event ring
// (for trace subscriptions) and aggregations. A definition's descriptor holds an
// atomic pointer to an immutable consumers snapshot; the generated fire methods load
// it once per fire and do nothing more when it is nil, so a probe nobody traces or
// aggregates pays one atomic load. Subscribing and unsubscribing rebuild the
// snapshots of the probes concerned (copy on write, under consMu).
type consumers struct {
	id     uint32 // the probe's id, as events carry it
	traces []traceEntry
	aggs   []aggEntry
}

type traceEntry struct {
	bit uint64 // the subscription's bit in event.Subs
	f   *filter
}

type aggEntry struct {
	a *aggregation
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

// emit feeds one admitted fire to the consumers. ret names the site, as for admit.
func (c *consumers) emit(ret uintptr, v *argv) {
	s := reg.byReturn.lookup(ret)
	var addr uintptr
	if s != nil {
		addr = s.Addr
	}
	var mask uint64
	for i := range c.traces {
		if c.traces[i].f.wants(s) {
			mask |= c.traces[i].bit
		}
	}
	if mask != 0 {
		if r := procRing.Load(); r != nil {
			r.put(nanotime(), addr, c.id, mask, v)
		}
	}
	for i := range c.aggs {
		if c.aggs[i].f.wants(s) {
			c.aggs[i].a.add(c.id, addr, v)
		}
	}
}

// subscription is one trace or aggregation attached to the probes a spec matched.
type subscription struct {
	bit     uint64 // trace: its bit in event.Subs
	agg     *aggregation
	filters map[*probe]*filter
}

var cons struct {
	mu     sync.Mutex
	subs   []*subscription
	ids    map[*probe]uint32
	byID   []*probe
	bits   uint64 // trace bits in use
	reader bool
}

// errTooManyTraces is returned when every trace subscription bit is in use.
var errTooManyTraces = errors.New("too many concurrent traces (64)")

// probeID returns p's id, assigning one. Call with cons.mu held.
func probeID(p *probe) uint32 {
	if id, ok := cons.ids[p]; ok {
		return id
	}
	if cons.ids == nil {
		cons.ids = map[*probe]uint32{}
	}
	id := uint32(len(cons.byID))
	cons.ids[p] = id
	cons.byID = append(cons.byID, p)
	return id
}

// probeByID returns the probe events with this id come from.
func probeByID(id uint32) *probe {
	cons.mu.Lock()
	defer cons.mu.Unlock()
	if int(id) < len(cons.byID) {
		return cons.byID[id]
	}
	return nil
}

// matchFilters resolves sp against the registry: per probe, which of its fires match.
func matchFilters(sp spec.Spec) map[*probe]*filter {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.resolve()
	out := map[*probe]*filter{}
	for _, p := range reg.probes {
		f := &filter{all: true, sites: map[*site]bool{}}
		for _, s := range p.sites {
			if sp.Match(p.provider, s.Module, s.Func, p.name) {
				f.sites[s] = true
			} else {
				f.all = false
			}
		}
		f.wide = sp.Match(p.provider, p.module, "", p.name)
		if len(f.sites) == 0 {
			f.all = false
		}
		if f.wide || len(f.sites) > 0 {
			if f.all {
				f.sites = nil
			}
			out[p] = f
		}
	}
	return out
}

// subscribe attaches a trace (agg == nil) or an aggregation to what specText matches.
func subscribe(specText string, agg *aggregation) (*subscription, error) {
	sp, err := parseSpec(specText)
	if err != nil {
		return nil, err
	}
	fs := matchFilters(sp)
	if len(fs) == 0 {
		return nil, fmt.Errorf("%q: %w", specText, ErrNoMatch)
	}
	cons.mu.Lock()
	defer cons.mu.Unlock()
	sub := &subscription{agg: agg, filters: fs}
	if agg == nil {
		for i := range 64 {
			if cons.bits&(1<<i) == 0 {
				sub.bit = 1 << i
				break
			}
		}
		if sub.bit == 0 {
			return nil, errTooManyTraces
		}
		cons.bits |= sub.bit
		if procRing.Load() == nil {
			procRing.Store(newRing(ringSize))
		}
	}
	cons.subs = append(cons.subs, sub)
	rebuild(fs)
	return sub, nil
}

// probeIDs is the ids of the probes the subscription covers, as events carry them.
func (sub *subscription) probeIDs() map[uint32]bool {
	cons.mu.Lock()
	defer cons.mu.Unlock()
	ids := make(map[uint32]bool, len(sub.filters))
	for p := range sub.filters {
		ids[probeID(p)] = true
	}
	return ids
}

// close detaches the subscription.
func (sub *subscription) close() {
	cons.mu.Lock()
	defer cons.mu.Unlock()
	for i, x := range cons.subs {
		if x == sub {
			cons.subs = append(cons.subs[:i:i], cons.subs[i+1:]...)
			cons.bits &^= sub.bit
			rebuild(sub.filters)
			return
		}
	}
}

// rebuild publishes new consumer snapshots for the probes in fs. cons.mu held.
func rebuild(fs map[*probe]*filter) {
	for p := range fs {
		c := &consumers{id: probeID(p)}
		for _, sub := range cons.subs {
			f := sub.filters[p]
			if f == nil {
				continue
			}
			if sub.agg != nil {
				c.aggs = append(c.aggs, aggEntry{a: sub.agg, f: f})
			} else {
				c.traces = append(c.traces, traceEntry{bit: sub.bit, f: f})
			}
		}
		if len(c.aggs) == 0 && len(c.traces) == 0 {
			c = nil
		}
		p.cons.Store(c)
	}
}
