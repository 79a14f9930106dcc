package ctlproto

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Live reading (linux): sdtctl reads a trace's rings while the process writes them,
// and the process copies nothing. With Request.Live the started frame's descriptors
// (Response.Shared) are the description log, then the heads (Heads...), then the
// first buffers; the process sends no records, only new buffers, clocks and the end.
//
// The heads are a small memory of their own, the one the reader may write: word i
// is where buffer i's unread records start (a byte count, as the ring's tail). The
// process only reads it, to know what room is free; the rings stay read-only to the
// reader. Its words, little-endian u64:
//
//	0    "gosdthd1"
//	8    how many heads it has room for (buffers past it are not made)
//	64   head of buffer 0, then one word per buffer
const (
	HeadsMagic = 0x3164687464736f67 // "gosdthd1"
	HeadsCount = 8
	HeadsStart = 64
)

// DescLogLost is the description log's word that counts fires on a P that had no
// buffer (GOMAXPROCS raised past what the trace's budget allowed): dropped, counted
// where a reader sees them after the process has ended.
const DescLogLost = 24

// Ring is a trace buffer as a reader maps it (RingHeader, then the ring), read
// while the process writes it: every bound is checked, nothing in it is trusted.
type Ring struct {
	m    []byte
	ring []byte
	size uint64
}

// OpenRing checks m's header.
func OpenRing(m []byte) (*Ring, error) {
	if len(m) < RingHeader+MinRing {
		return nil, Errorf(CodeBadRequest, "ring of %d bytes", len(m))
	}
	le := binary.LittleEndian
	size := le.Uint64(m[RingSize:])
	if le.Uint64(m) != RingMagic || size == 0 || size&(size-1) != 0 || size > uint64(len(m)-RingHeader) {
		return nil, Errorf(CodeBadRequest, "not a trace ring")
	}
	return &Ring{m: m, ring: m[RingHeader : RingHeader+int(size)], size: size}, nil
}

// Word is an atomic read of the u64 at off of m (8-aligned; a mapping is).
func Word(m []byte, off int) uint64 {
	_ = m[off+7]
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&m[off])))
}

// SetWord is an atomic write of the u64 at off of m (a reader's heads).
func SetWord(m []byte, off int, v uint64) {
	_ = m[off+7]
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&m[off])), v)
}

// Tail is the end of what the process has published (an acquire: the records
// before it are written).
func (r *Ring) Tail() uint64 { return Word(r.m, RingTail) }

// Writing is the end of the record being written (above Tail while one is).
func (r *Ring) Writing() uint64 { return Word(r.m, RingWriting) }

// Drops is all the ring has dropped (full).
func (r *Ring) Drops() uint64 { return Word(r.m, RingDrops) }

// Walk calls f with each record from from to tail (Tail's), views of the ring, not
// copies, until f returns false (that record is not passed) or max bytes are
// passed; it returns where it stopped and the drops the ring's LostRecords counted
// on the way. A record that cannot be read is an error, with next where it lies.
func (r *Ring) Walk(from, tail, max uint64, f func(rec Record) bool) (next, marked uint64, err error) {
	if tail < from || tail-from > r.size {
		return from, 0, Errorf(CodeBadRequest, "ring: %d bytes to read of %d", int64(tail-from), r.size)
	}
	le := binary.LittleEndian
	end := tail
	if max < tail-from {
		end = from + max
	}
	pos := from
	for pos < end {
		off := pos & (r.size - 1)
		if off+8 > r.size || pos&7 != 0 {
			return pos, marked, Errorf(CodeBadRequest, "ring: misaligned record at %d", pos)
		}
		w := le.Uint64(r.ring[off:])
		n := w & 0xffff
		if n < 8 || n&7 != 0 || off+n > r.size || pos+n > tail {
			return pos, marked, Errorf(CodeBadRequest, "ring: bad record of %d bytes at %d", n, pos)
		}
		switch w >> 16 & 0xff {
		case PadRecord:
		case LostRecord:
			if n != 16 {
				return pos, marked, Errorf(CodeBadRequest, "ring: bad drop count at %d", pos)
			}
			marked += le.Uint64(r.ring[off+8:])
		default:
			if n < RecordHead {
				return pos, marked, Errorf(CodeBadRequest, "ring: bad record of %d bytes at %d", n, pos)
			}
			if !f(Record(r.ring[off : off+n])) {
				return pos, marked, nil
			}
		}
		pos += n
	}
	return pos, marked, nil
}

// What a Scan's f says of a record.
const (
	ScanTake = iota // counted; the next of its probe and site are, without a call
	ScanSkip        // not counted (f has counted it itself); the walk goes on
	ScanStop        // not counted, and the walk stops before it
)

// Scan is Walk for a reader that passes the records on as the ring holds them (a
// raw trace): it counts the records from from to tail, at most limit of them and
// max bytes, and calls f only for a record whose probe and site differ from those
// of the last one f took, so that a run of one site's records costs a word
// compare each. It returns where it stopped, the records counted (f's takes and
// those it was not asked about) and the drops the ring's LostRecords counted.
func (r *Ring) Scan(from, tail, max, limit uint64, f func(rec Record) int) (next, n, marked uint64, err error) {
	if tail < from || tail-from > r.size {
		return from, 0, 0, Errorf(CodeBadRequest, "ring: %d bytes to read of %d", int64(tail-from), r.size)
	}
	if from&7 != 0 {
		return from, 0, 0, Errorf(CodeBadRequest, "ring: misaligned record at %d", from)
	}
	le := binary.LittleEndian
	end := tail
	if max < tail-from {
		end = from + max
	}
	ring, size := r.ring, r.size
	var probe, site uint64
	known := false
	pos := from
	for pos < end {
		off := pos & (size - 1)
		w := le.Uint64(ring[off:])
		sz := w & 0xffff
		if sz < 8 || sz&7 != 0 || off+sz > size || pos+sz > tail {
			return pos, n, marked, Errorf(CodeBadRequest, "ring: bad record of %d bytes at %d", sz, pos)
		}
		switch w >> 16 & 0xff {
		case PadRecord:
		case LostRecord:
			if sz != 16 {
				return pos, n, marked, Errorf(CodeBadRequest, "ring: bad drop count at %d", pos)
			}
			marked += le.Uint64(ring[off+8:])
		default:
			if sz < RecordHead {
				return pos, n, marked, Errorf(CodeBadRequest, "ring: bad record of %d bytes at %d", sz, pos)
			}
			if n >= limit {
				return pos, n, marked, nil
			}
			s := le.Uint64(ring[off+8:])
			if !known || w>>32 != probe || s != site {
				switch f(Record(ring[off : off+sz])) {
				case ScanStop:
					return pos, n, marked, nil
				case ScanSkip:
					pos += sz
					continue
				}
				known, probe, site = true, w>>32, s
			}
			n++
		}
		pos += sz
	}
	return pos, n, marked, nil
}

// Size is the ring's bytes.
func (r *Ring) Size() uint64 { return r.size }
