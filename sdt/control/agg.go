package control

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/quantize"
	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

// Aggregation folds the fires of the probes a spec matched into rows, as sdtctl
// stat shows them, from OpenAggregation until Close, without recording each event.
// While open it holds those probes on, as its own owner.
type Aggregation struct {
	a *aggregation
	c *consumer
}

// AggOptions says what an aggregation's rows are keyed by and what they fold.
type AggOptions struct {
	By    string // "probe" (the default), "site", or "argN": one row per value of argument N
	Value string // "argN": rows also sum, bound and average argument N; "": they count only
	Hist  bool   // rows also quantize Value in power-of-two buckets, as DTrace's quantize
}

// Snapshot is an aggregation's rows at one moment, by count, largest first.
type Snapshot struct {
	By, Value string
	Rows      []Row
	Overflow  uint64 // fires not counted: their key would have been row MaxRows+1
}

// Row is one key's fold. Sum, Min, Max, Avg and Hist are of the Value argument.
type Row struct {
	Key        string
	Count, Sum int64
	Min, Max   int64
	Avg        float64
	Hist       []Bucket // the non-empty buckets, lowest first
}

// Bucket is a power-of-two histogram bucket: values from Low (its bound nearest
// zero) up to the next bucket's bound.
type Bucket struct {
	Low   int64
	Count uint64
}

// MaxRows bounds the keys of one aggregation.
const MaxRows = 4096

// OpenAggregation switches on the probes spec matches (as sdt.Enable) and folds their
// fires until Close. Errors match sdt.ErrNoMatch, sdt.ErrMalformedSpec and
// sdt.ErrNotSupported; bad options are reported before anything is switched.
func OpenAggregation(spec string, o AggOptions) (*Aggregation, error) {
	return openAggregation("in-process aggregation", spec, o)
}

func openAggregation(who, spec string, o AggOptions) (*Aggregation, error) {
	a, err := newAggregation(o)
	if err != nil {
		return nil, err
	}
	c, err := open(who, spec, a, nil)
	if err != nil {
		return nil, err
	}
	a.c = c
	return &Aggregation{a: a, c: c}, nil
}

// Snapshot reads the aggregation.
func (a *Aggregation) Snapshot() Snapshot { return a.a.snapshot() }

// Close releases the aggregation's probes (switching off what no other owner holds)
// and stops folding.
func (a *Aggregation) Close() error {
	a.c.close()
	return nil
}

// aggregation counts the fires it is fed, keyed by by (argument byArg for "arg");
// when val >= 0 it also sums, bounds and (hist) quantizes argument val. Lookups of
// existing keys are lock-free (a copy-on-write map); cells are updated with atomics.
type aggregation struct {
	by       string // probe, site or arg
	byArg    int
	val      int
	hist     bool
	c        *consumer // names probes and sites at snapshot
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

func newAggregation(o AggOptions) (*aggregation, error) {
	a := &aggregation{by: "probe", val: -1, hist: o.Hist}
	switch o.By {
	case "", "probe":
	case "site":
		a.by = "site"
	default:
		n, ok := argN(o.By)
		if !ok {
			return nil, fmt.Errorf("control: aggregation key %q: want probe, site or arg0 to arg%d", o.By, bridge.MaxArgs-1)
		}
		a.by, a.byArg = "arg", n
	}
	if o.Value != "" {
		n, ok := argN(o.Value)
		if !ok {
			return nil, fmt.Errorf("control: aggregated value %q: want arg0 to arg%d", o.Value, bridge.MaxArgs-1)
		}
		a.val = n
	} else if o.Hist {
		return nil, fmt.Errorf("control: a histogram needs a value (argN) to quantize")
	}
	m := map[aggKey]*aggCell{}
	a.cells.Store(&m)
	return a, nil
}

// argN parses "argN", N from 0.
func argN(s string) (int, bool) {
	if len(s) == 4 && strings.HasPrefix(s, "arg") && s[3] >= '0' && s[3] < '0'+bridge.MaxArgs {
		return int(s[3] - '0'), true
	}
	return 0, false
}

// Fire folds one fire: the aggregation is a bridge.Sink.
func (a *aggregation) Fire(f *bridge.Firing) { a.fire(f.Probe, f.Site, &f.Args) }

func (a *aggregation) fire(probe uint32, site uintptr, v *bridge.Args) {
	var k aggKey
	switch a.by {
	case "arg":
		i := a.byArg
		if i >= v.N {
			return // this probe has no such argument
		}
		switch v.Kinds[i] {
		case bridge.String:
			s := v.Strs[i]
			k = aggKey{s: s[:min(len(s), StringMax)], str: true}
		case bridge.Int:
			k = aggKey{n: int64(v.Slots[i])}
		default:
			k = aggKey{n: v.Int(i)}
		}
	default: // probe and site: folded at snapshot
		k = aggKey{probe: probe, site: site}
	}
	var x int64
	if a.val >= 0 {
		if a.val >= v.N {
			return
		}
		x = v.Int(a.val)
	}
	c := (*a.cells.Load())[k]
	if c == nil {
		if c = a.insert(k); c == nil {
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

// insert adds a key (its string copied: the fire's string dies with the fire). It
// runs pinned to a P (bridge.Sink): no lock, a compare-and-swap of the map.
func (a *aggregation) insert(k aggKey) *aggCell {
	k.s = strings.Clone(k.s)
	c := &aggCell{}
	c.min.Store(math.MaxInt64)
	c.max.Store(math.MinInt64)
	if a.hist {
		c.hist = new([quantize.Buckets]atomic.Uint64)
	}
	for {
		oldp := a.cells.Load()
		old := *oldp
		if x := old[k]; x != nil {
			return x
		}
		if len(old) >= MaxRows {
			return nil
		}
		m := make(map[aggKey]*aggCell, len(old)+1)
		for kk, v := range old {
			m[kk] = v
		}
		m[k] = c
		if a.cells.CompareAndSwap(oldp, &m) {
			return c
		}
	}
}

// snapshot reads the aggregation; rows sorted by count, descending.
func (a *aggregation) snapshot() Snapshot {
	snap := Snapshot{By: a.by, Overflow: a.overflow.Load()}
	if a.by == "arg" {
		snap.By = "arg" + strconv.Itoa(a.byArg)
	}
	if a.val >= 0 {
		snap.Value = "arg" + strconv.Itoa(a.val)
	}
	rows := map[string]*Row{}
	var hists = map[string]*[quantize.Buckets]uint64{}
	for k, c := range *a.cells.Load() {
		key := a.keyName(k)
		r := rows[key]
		if r == nil {
			r = &Row{Key: key, Min: math.MaxInt64, Max: math.MinInt64}
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
					r.Hist = append(r.Hist, Bucket{Low: quantize.Low(i), Count: n})
				}
			}
		}
		snap.Rows = append(snap.Rows, *r)
	}
	// sort.Slice, not slices.SortFunc: no sort code instantiated for Row in every
	// program that uses probes.
	sort.Slice(snap.Rows, func(i, j int) bool {
		x, y := &snap.Rows[i], &snap.Rows[j]
		return x.Count > y.Count || x.Count == y.Count && x.Key < y.Key
	})
	return snap
}

func (a *aggregation) keyName(k aggKey) string {
	switch a.by {
	case "arg":
		if k.str {
			return k.s
		}
		return strconv.FormatInt(k.n, 10)
	case "site":
		name := a.c.name(k.probe, k.site)
		if p := a.c.probes[k.probe]; p != nil {
			if s := p.Site(k.site); s != nil {
				return fmt.Sprintf("%s %#x %s:%d", name, s.Addr, s.File, s.Line)
			}
		}
		return name + " (not attributed to a site)"
	}
	return a.c.name(k.probe, k.site)
}
