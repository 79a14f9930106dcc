package control

import (
	"sync/atomic"

	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

// ring is a bounded lock-free multi-producer queue of fixed-size records (the bounded
// MPMC queue of D. Vyukov, used with one reader). Every record carries a sequence
// number: a producer claims position pos by a CAS on tail when the record there has
// seq == pos, fills it and publishes it by storing seq = pos+1; the reader takes it
// when seq == pos+1 and hands it back with seq = pos+size. A producer that finds the
// record at its position not yet read does not wait: the event is dropped and
// counted. Producers never block and never allocate.
type ring struct {
	_     [64]byte
	tail  atomic.Uint64 // next position to claim
	_     [56]byte
	head  atomic.Uint64 // next position to read (one reader at a time)
	_     [56]byte
	drops atomic.Uint64 // events lost because the ring was full
	recs  []slot
	mask  uint64
}

type slot struct {
	seq atomic.Uint64
	rec record
}

// newRing returns a ring of size records, rounded up to a power of two.
func newRing(size int) *ring {
	n := 1
	for n < size {
		n <<= 1
	}
	r := &ring{recs: make([]slot, n), mask: uint64(n - 1)}
	for i := range r.recs {
		r.recs[i].seq.Store(uint64(i))
	}
	return r
}

// put records one fire, or counts a drop when the ring is full.
func (r *ring) put(t int64, site uintptr, probe uint32, a *bridge.Args) bool {
	for {
		pos := r.tail.Load()
		s := &r.recs[pos&r.mask]
		seq := s.seq.Load()
		switch {
		case seq == pos:
			if !r.tail.CompareAndSwap(pos, pos+1) {
				continue
			}
			s.rec.fill(t, site, probe, a)
			s.seq.Store(pos + 1)
			return true
		case seq < pos:
			r.drops.Add(1) // the record a lap behind has not been read: full
			return false
		}
		// seq > pos: another producer claimed pos meanwhile; retry with a new tail.
	}
}

// get copies the oldest record into rec; false when the ring is empty. One reader
// at a time.
func (r *ring) get(rec *record) bool {
	pos := r.head.Load()
	s := &r.recs[pos&r.mask]
	if s.seq.Load() != pos+1 {
		return false
	}
	*rec = s.rec
	r.head.Store(pos + 1)
	s.seq.Store(pos + r.mask + 1)
	return true
}
