package consume

import (
	"sync/atomic"

	"github.com/gosdt/gosdt/sdt/internal/registry"
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
	// a folding aggregation's cells by site index (Fold), once the site has fired:
	// where its fires find them without calling it (registry.FoldTable)
	fold registry.FoldShard
	_    [16]byte
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
	var hist []uint64
	if buckets > 0 {
		hist = make([]uint64, (buckets+7)&^7)[:buckets] // whole cache lines
	}
	c.Init(hist)
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
