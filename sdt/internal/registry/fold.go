package registry

import (
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/quantize"
)

// A folding subscription's common fire (one folder of every site of the probe, its
// site's cell made by an earlier fire on the same P) folds here, in the fire, with
// no call to the folder: the folder's cells, their layout and their fold are the
// registry's (FoldCell, FoldTable), its rows, keys, budget and readers the folder's.
// The folder is called (Folder.Fold) only for a fire that finds no cell at hand.

// FoldCell is one row's fold on one P: written by the P's writers only (plain
// stores, pinned), read by the folder's readers with atomic loads.
type FoldCell struct {
	Count, Sum int64
	Min, Max   int64     // since the cell was made
	MM         [2]FoldMM // the minimum and maximum of the current and the previous interval
	Hist       []uint64  // the histogram's buckets (FoldTable.Bucket); nil without
}

// FoldMM is an interval's minimum and maximum; Gen says which interval.
type FoldMM struct {
	Gen      uint64
	Min, Max int64
}

// FoldShard is one P's cells at hand, by site index (site.index): written by the
// P's writers only. Its holder keeps it off other Ps' cache lines.
type FoldShard struct {
	Slots []*FoldCell
}

// FoldTable is a folder's cells at hand (by P, then by site index) and how a value
// folds into them: which histogram bucket, and whether into an interval's minimum
// and maximum.
type FoldTable struct {
	shards atomic.Pointer[[]*FoldShard] // by P; nil once the folder is closed
	// Gen is the interval fires fold their minimum and maximum into; 0 until the
	// folder asks for them (the first interval is the folder's life, whose minimum
	// and maximum every fire folds)
	Gen     atomic.Uint64
	buckets int  // histogram buckets; 0 without
	linear  bool // linear buckets (low, high, step), else powers of two (quantize)
	pow2    bool // buckets and not linear: one test on the fire's path (Pow2)
	low     int64
	high    int64
	step    int64
}

// SetHist sets t's histogram, before its first fire: n power-of-two buckets
// (quantize.Buckets), or, linear, 1 below low, one per step from low to high, 1 from
// high on; n 0: none.
func (t *FoldTable) SetHist(n int, linear bool, low, high, step int64) {
	t.buckets, t.linear, t.low, t.high, t.step = n, linear, low, high, step
	t.pow2 = n > 0 && !linear
}

// SetShards publishes the Ps' cells at hand; nil: fires find none (closed).
func (t *FoldTable) SetShards(s []*FoldShard) {
	if s == nil {
		t.shards.Store(nil)
		return
	}
	t.shards.Store(&s)
}

// cell is the cell at hand of P p for site index slot; nil if none. The P's
// writers.
//
//go:norace
func (t *FoldTable) cell(p, slot int) *FoldCell {
	sh := t.shards.Load()
	if sh == nil || uint(p) >= uint(len(*sh)) {
		return nil
	}
	if s := (*sh)[p].Slots; uint(slot) < uint(len(s)) {
		return s[slot]
	}
	return nil
}

// linearBucket is x's bucket in t's linear histogram.
func (t *FoldTable) linearBucket(x int64) int {
	switch {
	case x < t.low:
		return 0
	case x >= t.high:
		return t.buckets - 1
	}
	return 1 + int((x-t.low)/t.step)
}

// Init readies a new cell for t's fires: no minimum or maximum yet, and t's
// histogram. hist is the buckets' memory, len at least t's buckets; nil without.
func (c *FoldCell) Init(hist []uint64) {
	c.Min, c.Max = maxInt64, minInt64
	c.MM[0].Gen, c.MM[1].Gen = ^uint64(0), ^uint64(0)
	c.Hist = hist
}

const (
	maxInt64 = 1<<63 - 1
	minInt64 = -1 << 63
)

// Fold folds a fire of value x into c, as t says. The P's writers.
//
//go:norace
func (c *FoldCell) Fold(x int64, t *FoldTable) {
	c.Add(x)
	c.foldMore(x, t)
}

// Add counts a fire of value x, sums it and bounds it: all of Fold, for a table
// with no histogram and no interval asked for (foldEntry.More false). The P's
// writers; inlined into package sdt's fire.
//
//go:norace
func (c *FoldCell) Add(x int64) {
	store64(&c.Count, c.Count+1)
	store64(&c.Sum, c.Sum+x)
	if x < c.Min {
		store64(&c.Min, x)
	}
	if x > c.Max {
		store64(&c.Max, x)
	}
}

// foldMore is the rest of Fold after Add: x's histogram bucket, and the interval's
// minimum and maximum once asked for. A leaf (no call, no frame).
//
//go:norace
func (c *FoldCell) foldMore(x int64, t *FoldTable) {
	switch {
	case t.buckets == 0:
	case t.linear:
		c.count1(t.linearBucket(x))
	default:
		c.Quantize(x)
	}
	if gen := t.Gen.Load(); gen != 0 {
		c.foldInterval(x, gen)
	}
}

// The common folding fire (package sdt's, of a probe one folder alone consumes,
// its cell made) folds with no call at all where it can: Cell, then Add, Quantize
// if Pow2, and FoldMore only if More. Anything else takes Fold.
//
// Cell finds the cell beside the site's hit counter (atHandTable, indexed as
// reg.hitShards), not through the folder's table: the table's path from the
// consumers to the cell is seven dependent loads, which were most of what a sum's
// fire added to a count's; this one is the site's index, then the entry, while the
// entry's table loads beside them. A folder's subscription closes before the folder
// stops folding (consume's Close), and closing one drops every cell at hand
// (renewAtHand): a fire that starts after the close finds none of its cells.

// cellAtHand is the cell the fires of one site on one P fold into while their
// probe's one folder (Consumers.Fold1) is t's: written by that P's fires only
// (Fold, on the fire that finds none), read by them (Cell).
type cellAtHand struct {
	t *FoldTable
	c *FoldCell
}

// Cell is the cell at hand of e's folder for a fire from s on P pid, to which the
// caller is pinned; nil if none (the fire is not one of every site's, or its
// site's first on the P since the last folder closed): then Fold. Inlined into package
// sdt's fire.
//
//go:norace
func (e *foldEntry) Cell(pid int, s *site) *FoldCell {
	if s == nil || !e.all {
		return nil
	}
	if h := atHand(pid*reg.hitStride + s.index); h != nil && h.t == e.t {
		return h.c
	}
	return nil
}

// keep makes c, s's cell in e's table, the one at hand for s's fires on P pid (Cell),
// to which the caller is pinned: e is its probe's one folder (Fold1).
//
//go:norace
func (e *foldEntry) keep(pid int, s *site, c *FoldCell) {
	if h := atHand(pid*reg.hitStride + s.index); h != nil {
		h.t, h.c = e.t, c
	}
}

// renewAtHand gives the fires a new table of cells at hand, empty, while some
// subscription folds (nil while none does): it drops the old table's references to
// the cells and tables of folders that closed, which would keep them alive. A fire
// still writing the old one writes memory nobody reads. Call with r.mu held.
func (r *registry) renewAtHand() {
	for _, sub := range r.subs {
		if sub.folder != nil {
			setAtHand(make([]cellAtHand, len(r.hitShards)))
			return
		}
	}
	setAtHand(nil)
}

// Pow2 reports whether a fire's value folds into a power-of-two histogram beside
// Add (Quantize), and More whether into anything else: a linear histogram, or an
// interval's minimum and maximum (FoldMore).
func (e *foldEntry) Pow2() bool { return e.t.pow2 }

// More: see Pow2.
func (e *foldEntry) More() bool { return e.t.linear || e.t.Gen.Load() != 0 }

// Quantize counts value x in its power-of-two bucket (Pow2).
//
//go:norace
func (c *FoldCell) Quantize(x int64) { c.count1(quantize.Bucket(x)) }

// FoldMore folds value x into c beyond Add and Quantize (More).
//
//go:norace
func (e *foldEntry) FoldMore(c *FoldCell, x int64) {
	t := e.t
	if t.linear {
		c.count1(t.linearBucket(x))
	}
	if gen := t.Gen.Load(); gen != 0 {
		c.foldInterval(x, gen)
	}
}

// count1 counts a value in histogram bucket b (Fold).
//
//go:norace
func (c *FoldCell) count1(b int) {
	if uint(b) < uint(len(c.Hist)) {
		storeU64(&c.Hist[b], c.Hist[b]+1)
	}
}

// Inc counts a fire with no value. The P's writers.
//
//go:norace
func (c *FoldCell) Inc() { store64(&c.Count, c.Count+1) }

// foldInterval folds value x into the minimum and maximum of interval gen.
//
//go:norace
func (c *FoldCell) foldInterval(x int64, gen uint64) {
	s := &c.MM[gen&1]
	if s.Gen != gen {
		store64(&s.Min, x)
		store64(&s.Max, x)
		storeU64(&s.Gen, gen)
	} else {
		if x < s.Min {
			store64(&s.Min, x)
		}
		if x > s.Max {
			store64(&s.Max, x)
		}
	}
}

// The P's writers fold into a cell with plain stores (it is theirs; readers load
// atomically). On a 32-bit machine a plain 64-bit store is two, which a reader could
// see half done: there, atomic stores.

// wideStores: 64-bit stores are single-copy atomic.
const wideStores = ^uintptr(0)>>63 == 1

//go:norace
func store64(p *int64, v int64) {
	if wideStores {
		*p = v
	} else {
		atomic.StoreInt64(p, v)
	}
}

//go:norace
func storeU64(p *uint64, v uint64) {
	if wideStores {
		*p = v
	} else {
		atomic.StoreUint64(p, v)
	}
}
