package sdt

import (
	"sync/atomic"
)

// ring is a bounded lock-free multi-producer queue of fixed-size event records (the
// bounded MPMC queue of D. Vyukov, used with one reader). Every record carries a
// sequence number: a producer claims position pos by a CAS on tail when the record
// there has seq == pos, fills it and publishes it by storing seq = pos+1; the reader
// takes it when seq == pos+1 and hands it back with seq = pos+size. A producer that
// finds the record at its position not yet read does not wait: the event is dropped
// and counted. Producers never block and never allocate.
type ring struct {
	_     [64]byte
	tail  atomic.Uint64 // next position to claim
	_     [56]byte
	head  atomic.Uint64 // next position to read (one reader at a time)
	_     [56]byte
	drops atomic.Uint64 // events lost because the ring was full
	recs  []ringRecord
	mask  uint64
}

type ringRecord struct {
	seq atomic.Uint64
	ev  event
}

// newRing returns a ring of size records, rounded up to a power of two.
func newRing(size int) *ring {
	n := 1
	for n < size {
		n <<= 1
	}
	r := &ring{recs: make([]ringRecord, n), mask: uint64(n - 1)}
	for i := range r.recs {
		r.recs[i].seq.Store(uint64(i))
	}
	return r
}

// put records one event, or counts a drop when the ring is full.
func (r *ring) put(t int64, siteAddr uintptr, probe uint32, subs uint64, v *argv) bool {
	for {
		pos := r.tail.Load()
		rec := &r.recs[pos&r.mask]
		seq := rec.seq.Load()
		switch {
		case seq == pos:
			if !r.tail.CompareAndSwap(pos, pos+1) {
				continue
			}
			e := &rec.ev
			e.Time, e.Site, e.Probe, e.Subs = t, siteAddr, probe, subs
			e.fill(v)
			rec.seq.Store(pos + 1)
			return true
		case seq < pos:
			r.drops.Add(1) // the record a lap behind has not been read: full
			return false
		}
		// seq > pos: another producer claimed pos meanwhile; retry with a new tail.
	}
}

// get copies the oldest event into e; false when the ring is empty. One reader at a
// time.
func (r *ring) get(e *event) bool {
	pos := r.head.Load()
	rec := &r.recs[pos&r.mask]
	if rec.seq.Load() != pos+1 {
		return false
	}
	*e = rec.ev
	r.head.Store(pos + 1)
	rec.seq.Store(pos + r.mask + 1)
	return true
}

// ringSize is the number of records in the process's event ring (about 2.3 MB,
// allocated when the first trace starts).
const ringSize = 8192

// procRing is the process's event ring: every trace subscription's events go through
// it, each record marked with the subscriptions that want it.
var procRing atomic.Pointer[ring]

// ringDrops is the number of events the process's ring dropped because it was full.
func ringDrops() uint64 {
	if r := procRing.Load(); r != nil {
		return r.drops.Load()
	}
	return 0
}
