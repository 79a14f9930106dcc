package sdt

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/quantize"
)

// aggBy is what an aggregation is keyed by.
type aggBy struct {
	Kind string // "probe", "site" or "arg"
	Arg  int    // the argument, for "arg"
}

// parseAggBy parses "probe", "site" or "argN" (N from 0).
func parseAggBy(s string) (aggBy, error) {
	switch s {
	case "", "probe":
		return aggBy{Kind: "probe"}, nil
	case "site":
		return aggBy{Kind: "site"}, nil
	}
	if n, ok := parseArgN(s); ok {
		return aggBy{Kind: "arg", Arg: n}, nil
	}
	return aggBy{}, fmt.Errorf("aggregation key %q: want probe, site or argN", s)
}

func parseArgN(s string) (int, bool) {
	if len(s) == 4 && strings.HasPrefix(s, "arg") && s[3] >= '0' && s[3] < '0'+MaxArgs {
		return int(s[3] - '0'), true
	}
	return 0, false
}

// argIndex parses "argN" (N from 0 to 5).
func argIndex(s string) (int, error) {
	if n, ok := parseArgN(s); ok {
		return n, nil
	}
	return 0, fmt.Errorf("%q: want arg0 to arg%d", s, MaxArgs-1)
}

// maxAggKeys bounds the keys of one aggregation; fires with a new key beyond it are
// counted in aggSnapshot.Overflow.
const maxAggKeys = 4096

// aggregation counts the fires of its subscription, keyed by aggBy; when val >= 0 it
// also sums, bounds and (hist) quantizes argument val. Lookups of existing keys are
// lock-free (a copy-on-write map); cells are updated with atomics.
type aggregation struct {
	by       aggBy
	val      int
	hist     bool
	mu       sync.Mutex
	cells    atomic.Pointer[map[aggKey]*aggCell]
	overflow atomic.Uint64
}

type aggKey struct {
	probe uint32
	site  uintptr
	n     int64
	s     string
	str   bool
}

type aggCell struct {
	count, sum atomic.Int64
	min, max   atomic.Int64
	hist       *[quantize.Buckets]atomic.Uint64
}

func newAggregation(by aggBy, val int, hist bool) *aggregation {
	a := &aggregation{by: by, val: val, hist: hist}
	m := map[aggKey]*aggCell{}
	a.cells.Store(&m)
	return a
}

// argInt is argument i of v as an integer (see event.Int).
func (v *argv) argInt(i int) int64 {
	if v.kinds[i] == kindString {
		return int64(min(len(v.strs[i]), StringMax))
	}
	e := event{Kinds: v.kinds, Args: v.slots}
	return e.Int(i)
}

func (a *aggregation) add(probe uint32, siteAddr uintptr, v *argv) {
	var k aggKey
	switch a.by.Kind {
	case "arg":
		i := a.by.Arg
		if i >= v.n {
			return // this probe has no such argument
		}
		if v.kinds[i] == kindString {
			s := v.strs[i]
			k = aggKey{s: s[:min(len(s), StringMax)], str: true}
		} else {
			k = aggKey{n: int64(v.slots[i])}
			if v.kinds[i] != kindInt {
				k.n = v.argInt(i)
			}
		}
	default: // probe and site: folded at snapshot
		k = aggKey{probe: probe, site: siteAddr}
	}
	var x int64
	if a.val >= 0 {
		if a.val >= v.n {
			return
		}
		x = v.argInt(a.val)
	}
	c := (*a.cells.Load())[k]
	if c == nil {
		if c = a.insert(k.probe, k.site, k.n, k.s, k.str); c == nil {
			a.overflow.Add(1)
			return
		}
	}
	c.count.Add(1)
	if a.val < 0 {
		return
	}
	c.sum.Add(x)
	for m := c.min.Load(); x < m && !c.min.CompareAndSwap(m, x); m = c.min.Load() {
	}
	for m := c.max.Load(); x > m && !c.max.CompareAndSwap(m, x); m = c.max.Load() {
	}
	if c.hist != nil {
		c.hist[quantize.Bucket(x)].Add(1)
	}
}

// insert adds a key (its string copied: the fire's string dies with the fire).
func (a *aggregation) insert(probe uint32, site uintptr, n int64, str string, isStr bool) *aggCell {
	k := aggKey{probe: probe, site: site, n: n, s: strings.Clone(str), str: isStr}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := *a.cells.Load()
	if c := old[k]; c != nil {
		return c
	}
	if len(old) >= maxAggKeys {
		return nil
	}
	c := &aggCell{}
	c.min.Store(math.MaxInt64)
	c.max.Store(math.MinInt64)
	if a.hist {
		c.hist = new([quantize.Buckets]atomic.Uint64)
	}
	m := make(map[aggKey]*aggCell, len(old)+1)
	for kk, v := range old {
		m[kk] = v
	}
	m[k] = c
	a.cells.Store(&m)
	return c
}

// aggRow is one key of an aggregation snapshot. Sum, Min, Max and Hist are of the
// aggregated argument (when there is one).
type aggRow struct {
	Key   string       `json:"key"`
	Count int64        `json:"count"`
	Sum   int64        `json:"sum,omitempty"`
	Min   int64        `json:"min,omitempty"`
	Max   int64        `json:"max,omitempty"`
	Avg   float64      `json:"avg,omitempty"`
	Hist  []histBucket `json:"hist,omitempty"`
}

// histBucket is one non-empty histogram bucket: values from Low (its bound nearest
// zero) up to the next bucket's bound.
type histBucket struct {
	Low   int64  `json:"low"`
	Count uint64 `json:"count"`
}

// aggSnapshot is an aggregation's state at one moment.
type aggSnapshot struct {
	By       string   `json:"by"`
	Value    string   `json:"value,omitempty"` // the aggregated argument, "argN"
	Rows     []aggRow `json:"rows"`
	Overflow uint64   `json:"overflow,omitempty"` // fires not counted: too many keys
}

// snapshot reads the aggregation; rows sorted by count, descending.
func (a *aggregation) snapshot() aggSnapshot {
	snap := aggSnapshot{By: a.by.Kind, Overflow: a.overflow.Load()}
	if a.by.Kind == "arg" {
		snap.By = fmt.Sprintf("arg%d", a.by.Arg)
	}
	if a.val >= 0 {
		snap.Value = fmt.Sprintf("arg%d", a.val)
	}
	rows := map[string]*aggRow{}
	var hists = map[string]*[quantize.Buckets]uint64{}
	for k, c := range *a.cells.Load() {
		key := a.keyName(k)
		r := rows[key]
		if r == nil {
			r = &aggRow{Key: key, Min: math.MaxInt64, Max: math.MinInt64}
			rows[key] = r
		}
		r.Count += c.count.Load()
		r.Sum += c.sum.Load()
		r.Min = min(r.Min, c.min.Load())
		r.Max = max(r.Max, c.max.Load())
		if c.hist != nil {
			h := hists[key]
			if h == nil {
				h = new([quantize.Buckets]uint64)
				hists[key] = h
			}
			for i := range c.hist {
				h[i] += c.hist[i].Load()
			}
		}
	}
	for key, r := range rows {
		if a.val < 0 || r.Count == 0 {
			r.Sum, r.Min, r.Max = 0, 0, 0
		} else {
			r.Avg = float64(r.Sum) / float64(r.Count)
		}
		if h := hists[key]; h != nil {
			for i, n := range h {
				if n > 0 {
					r.Hist = append(r.Hist, histBucket{Low: quantize.Low(i), Count: n})
				}
			}
		}
		snap.Rows = append(snap.Rows, *r)
	}
	slices.SortFunc(snap.Rows, func(x, y aggRow) int {
		return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Key, y.Key))
	})
	return snap
}

func (a *aggregation) keyName(k aggKey) string {
	switch a.by.Kind {
	case "arg":
		if k.str {
			return k.s
		}
		return fmt.Sprint(k.n)
	}
	p := probeByID(k.probe)
	if p == nil {
		return "?"
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var s *site
	for _, x := range p.sites {
		if x.Addr == k.site {
			s = x
		}
	}
	module, fn := p.module, ""
	if s != nil {
		module, fn = s.Module, s.Func
	}
	name := p.provider + ":" + module + ":" + fn + ":" + p.name
	if a.by.Kind == "site" {
		if s != nil {
			return fmt.Sprintf("%s %#x %s:%d", name, s.Addr, s.File, s.Line)
		}
		return name + " (not attributed to a site)"
	}
	return name
}
