package consume

import (
	"math"
	"sync/atomic"
)

// aggShard is one P's cells of an aggregation: an open-addressing table from key to
// cell, written only by the P's writers (pinned, so one at a time) and read by
// readers without a lock. A writer adds a cell by filling its key and hash, then
// publishing its pointer; it grows the table by building a larger one and publishing
// it whole (readers may still walk the old one: it holds the same cells).
type aggShard struct {
	_ [64]byte
	// overflow counts fires not folded: the table had MaxRows keys (the P's writers).
	// First after the padding, so that it is 8-aligned on 32-bit machines too, where
	// readers load it atomically.
	overflow uint64
	tab      atomic.Pointer[aggTable]
	// the cells the P's writers folded into last, by their key's x (probe ids, or
	// an argument's value) modulo lastCells: the entry and return probes of a
	// function, fired in turn, each find their own
	last [lastCells]*aggCell
	// a folding aggregation's cells by site index (Fold), once the site has fired
	slots []*aggCell
	_     [16]byte
}

// lastCells is how many recent cells a shard keeps at hand.
const lastCells = 4

// recent is the cell folded into last among those whose key's x is congruent to
// x; nil if none. The P's writers.
func (sh *aggShard) recent(x uint64) *aggCell { return sh.last[x%lastCells] }

type aggTable struct {
	mask  uint64
	n     int // cells (the writers')
	slots []aggSlot
}

type aggSlot struct {
	h uint64
	c atomic.Pointer[aggCell]
}

func newAggShard() *aggShard {
	sh := &aggShard{}
	sh.tab.Store(&aggTable{mask: 15, slots: make([]aggSlot, 16)})
	return sh
}

// lookup returns k's cell (h is its hash) in a's shard sh, adding it if need be; nil
// when the shard has MaxRows keys or a's budget has no room for one more. The caller
// is pinned to the shard's P.
//
//go:norace
func (sh *aggShard) lookup(a *aggregation, k *aggKey, h uint64) *aggCell {
	c := sh.find(k, h)
	if c == nil {
		c = sh.insert(a, k, h)
	}
	if c != nil {
		sh.last[k.x%lastCells] = c
	}
	return c
}

// find returns k's cell, nil if it has none. The caller is pinned to the shard's P.
// The P's writers (goroutines, to the race detector) follow one another: norace, as
// the rest of the writers' half.
//
//go:norace
func (sh *aggShard) find(k *aggKey, h uint64) *aggCell {
	t := sh.tab.Load()
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		c := s.c.Load()
		if c == nil {
			return nil
		}
		if s.h == h && c.key.is(k) {
			return c
		}
	}
}

// insert adds a cell for k (its string copied: the fire's dies with the fire) to a's
// shard sh; nil, counted in overflow, when the shard has MaxRows or the cell does
// not fit in a's budget. The caller is pinned to the shard's P: it allocates, which
// the runtime allows there, and never waits.
//
//go:norace
func (sh *aggShard) insert(a *aggregation, k *aggKey, h uint64) *aggCell {
	t := sh.tab.Load()
	if t.n >= MaxRows || !a.charge(a.cellCost(k)) {
		sh.bumpOverflow()
		return nil
	}
	buckets := a.buckets
	c := &aggCell{}
	c.key = *k
	if k.str {
		c.key.s = string([]byte(k.s))
	}
	c.min, c.max = math.MaxInt64, math.MinInt64
	c.mm[0].gen, c.mm[1].gen = math.MaxUint64, math.MaxUint64
	if buckets > 0 {
		c.hist = make([]uint64, (buckets+7)&^7)[:buckets] // whole cache lines
	}
	if 2*(t.n+1) > len(t.slots) {
		t = t.grown()
		sh.tab.Store(t)
	}
	t.put(h, c)
	return c
}

// put adds c at hash h; the table has room. The P's writers.
//
//go:norace
func (t *aggTable) put(h uint64, c *aggCell) {
	i := h & t.mask
	for t.slots[i].c.Load() != nil {
		i = (i + 1) & t.mask
	}
	t.slots[i].h = h
	t.slots[i].c.Store(c)
	t.n++
}

// grown is a copy of t with twice its slots.
func (t *aggTable) grown() *aggTable {
	n := &aggTable{mask: 2*t.mask + 1, slots: make([]aggSlot, 2*len(t.slots))}
	for i := range t.slots {
		if c := t.slots[i].c.Load(); c != nil {
			n.put(t.slots[i].h, c)
		}
	}
	return n
}

// each calls f with every cell of the shard. Readers.
func (sh *aggShard) each(f func(c *aggCell)) {
	t := sh.tab.Load()
	for i := range t.slots {
		if c := t.slots[i].c.Load(); c != nil {
			f(c)
		}
	}
}

// bumpOverflow counts a fire not folded. The P's writers.
//
//go:norace
func (sh *aggShard) bumpOverflow() { sh.overflow++ }

func (sh *aggShard) overflowed() uint64 { return atomic.LoadUint64(&sh.overflow) }

// The P's writers fold into a cell with plain stores (it is theirs; readers load
// atomically). On a 32-bit machine a plain 64-bit store is two, which a reader could
// see half done: there, atomic stores.

// inc counts a fire.
//
//go:norace
func (c *aggCell) inc() { store64(&c.count, c.count+1) }

// fold counts a fire of value x.
//
//go:norace
func (c *aggCell) fold(x int64) {
	store64(&c.count, c.count+1)
	store64(&c.sum, c.sum+x)
	if x < c.min {
		store64(&c.min, x)
	}
	if x > c.max {
		store64(&c.max, x)
	}
}

// count1 counts a value in histogram bucket b.
//
//go:norace
func (c *aggCell) count1(b int) { storeU64(&c.hist[b], c.hist[b]+1) }

// foldInterval folds value x into the minimum and maximum of interval gen.
//
//go:norace
func (c *aggCell) foldInterval(x int64, gen uint64) {
	s := &c.mm[gen&1]
	if s.gen != gen {
		store64(&s.min, x)
		store64(&s.max, x)
		storeU64(&s.gen, gen)
	} else {
		if x < s.min {
			store64(&s.min, x)
		}
		if x > s.max {
			store64(&s.max, x)
		}
	}
}

// wide: 64-bit stores are single-copy atomic.
const wide = ^uintptr(0)>>63 == 1

//go:norace
func store64(p *int64, v int64) {
	if wide {
		*p = v
	} else {
		atomic.StoreInt64(p, v)
	}
}

//go:norace
func storeU64(p *uint64, v uint64) {
	if wide {
		*p = v
	} else {
		atomic.StoreUint64(p, v)
	}
}
