package consume

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// pbuf is one P's buffer of a trace: a byte ring of packed records (the layout of
// internal/ctlproto's records, which a stream sends as they are), with one writer
// and one reader. The writer is whichever goroutine fires on the P: sinks run with
// the goroutine pinned to its P (registry.Sink), so two writers never overlap, and no
// atomic read-modify-write is needed; a record is published by a release store of
// the ring's end (tail). The reader (the stream, or Trace.Read) copies records out
// and then advances head. A record that does not fit is dropped and counted: the
// writer never waits.
//
// tail and head count bytes from the start, never wrapping; a record is never split
// at the end of the ring: where it would be, a filler record (n = PadRecord) takes
// the rest of the ring and the record starts again at 0.
//
// Drops are counted (drops), and also written into the ring, where they happened: the
// first record that fits after some were dropped is preceded by a record of the
// count (n = LostRecord). So a reader knows which drops came before the records it
// has read (met): a trace that stops at its count does not count the fires after
// its last event as drops.
type pbuf struct {
	_ [64]byte
	// The writers' words first: 64-bit words read atomically must be 8-aligned, which
	// on 32-bit platforms only their place in the struct gives them.
	seen   uint64 // the writers' last read of head, reread only when full
	drops  uint64 // records lost because the ring was full (the P's writers)
	marked uint64 // drops written into the ring (the P's writers)
	// fires the trace's predicate rejected (the P's writers)
	filtered uint64
	tail     *atomic.Uint64 // end of the last record written (the P's writers), in the header
	writing  *uint64        // the header's writing word (the P's writers)
	hdrDrops *uint64        // the header's drops word (the P's writers)
	head     *atomic.Uint64 // start of the first record not yet read (the reader), in the header
	met      uint64         // drops the reader has met in the ring
	_        [16]byte
	b        []byte // len a power of two, 8-aligned (allocBuf); nil once freed
	mask     uint64
	mem      []byte // the mapping: the header (ctlproto.RingHeader) and b
	fd       int    // the shared memory's descriptor (linux, shared); -1: none
	next     uint64 // the stream's: head once the batch read is sent (scan, commit)
}

// The header's words (ctlproto's RingHeader) are the ring's state, not the pbuf's,
// so that what the writers published outlives the process: a reader that shares
// the mapping reads it after an exit, a panic or SIGKILL.

// lostSize is the bytes of a LostRecord.
const lostSize = 16

// newPbuf makes a ring of size bytes, a power of two of at least MinBufSize; shared:
// memory another process may map (allocBuf); head: where its reader keeps its head
// (a live trace's heads, headsMem), nil: in its header.
func newPbuf(size int, shared bool, head *atomic.Uint64) (*pbuf, error) {
	mem, fd, err := allocBuf(ctlproto.RingHeader+size, shared)
	if err != nil {
		return nil, err
	}
	b := &pbuf{mask: uint64(size - 1), b: mem[ctlproto.RingHeader:], mem: mem, fd: fd}
	le := binary.LittleEndian
	le.PutUint64(mem, ctlproto.RingMagic)
	le.PutUint64(mem[ctlproto.RingSize:], uint64(size))
	b.tail = atomicAt(mem, ctlproto.RingTail)
	b.writing = wordAt(mem, ctlproto.RingWriting)
	b.hdrDrops = wordAt(mem, ctlproto.RingDrops)
	b.head = atomicAt(mem, ctlproto.RingHead)
	if head != nil {
		b.head = head
	}
	return b, nil
}

// headsMem is a live trace's heads (ctlproto's Heads): sdtctl reads the rings and
// writes where it has read to; the process reads them only, to know what room is
// free (reserveSlow), and maps them read-only once sdtctl has them (seal). Nothing
// is copied out of the rings in the process then.
type headsMem struct {
	mem []byte
	fd  int
	n   int // heads it has room for
}

// newHeads maps room for n heads in shared memory; nil where none can be made.
func newHeads(n int) *headsMem {
	size := (ctlproto.HeadsStart + 8*n + 4095) &^ 4095
	mem, fd, err := allocBuf(size, true)
	if err != nil {
		return nil
	}
	if fd < 0 {
		freeBuf(mem, fd)
		return nil
	}
	n = (size - ctlproto.HeadsStart) / 8
	binary.LittleEndian.PutUint64(mem, ctlproto.HeadsMagic)
	binary.LittleEndian.PutUint64(mem[ctlproto.HeadsCount:], uint64(n))
	return &headsMem{mem: mem, fd: fd, n: n}
}

// word is buffer i's head; nil past the room.
func (h *headsMem) word(i int) *atomic.Uint64 {
	if h == nil || i >= h.n {
		return nil
	}
	return atomicAt(h.mem, ctlproto.HeadsStart+8*i)
}

// seal makes the heads read-only in the process: sdtctl has them, and it alone
// moves them.
func (h *headsMem) seal() { protectRead(h.mem) }

func (h *headsMem) free() {
	if h != nil && h.mem != nil {
		freeBuf(h.mem, h.fd)
		h.mem, h.fd = nil, -1
	}
}

// free gives the ring's memory back. Nothing may write or read it after: no fire
// (quiesce), no reader. The counters stay readable. Hidden from the race detector,
// which does not see the stop-the-world that orders the writers' last read of b.b
// before this.
//
//go:norace
func (b *pbuf) free() {
	if b.b != nil {
		freeBuf(b.mem, b.fd)
		b.b, b.mem, b.fd = nil, nil, -1
		// the counters stay readable, the header's words are gone with it
		b.tail, b.head = new(atomic.Uint64), new(atomic.Uint64)
		b.writing, b.hdrDrops = new(uint64), new(uint64)
	}
}

// reserve finds room for a record of need bytes (a multiple of 8) and returns where
// it starts in b.b and where the ring ends after it (publish that once written); ok
// is false, and the record is counted as dropped, when the ring is full. The caller
// is pinned to the ring's P.
//
//go:norace
func (b *pbuf) reserve(need uint64) (off, end uint64, ok bool) {
	tail := b.tail.Load()
	if b.fits(tail, need) {
		*b.writing = tail + need
		return tail & b.mask, tail + need, true
	}
	return b.reserveSlow(tail, need)
}

// fits reports whether a record of need bytes goes at tail as most do: nothing
// dropped to mark, room before the ring's end, room as of the writers' last look at
// head. reserve's first half, small enough to inline into a sink's fast path.
//
//go:norace
func (b *pbuf) fits(tail, need uint64) bool {
	return b.drops == b.marked && tail&b.mask+need <= b.mask+1 && tail+need-b.seen <= b.mask+1
}

// reserveSlow is reserve for a record that wraps, follows drops, or needs a fresh
// look at head.
//
//go:norace
func (b *pbuf) reserveSlow(tail, need uint64) (off, end uint64, ok bool) {
	size := b.mask + 1
	var lost uint64
	if b.drops != b.marked {
		lost = lostSize
	}
	pos := tail & b.mask
	var pad uint64
	if pos+lost+need > size {
		pad = size - pos
	}
	if tail+pad+lost+need-b.seen > size {
		b.seen = b.head.Load()
		if tail+pad+lost+need-b.seen > size {
			b.drops++
			*b.hdrDrops = b.drops
			return 0, 0, false
		}
	}
	if pad > 0 {
		binary.LittleEndian.PutUint64(b.b[pos:], pad|ctlproto.PadRecord<<16)
		pos = 0
	}
	if lost > 0 {
		binary.LittleEndian.PutUint64(b.b[pos:], lostSize|ctlproto.LostRecord<<16)
		binary.LittleEndian.PutUint64(b.b[pos+8:], b.drops-b.marked)
		b.marked = b.drops
		pos += lostSize
	}
	*b.writing = tail + pad + lost + need
	return pos, tail + pad + lost + need, true
}

// filter counts a fire the trace's predicate rejected. The caller is pinned to the
// ring's P.
//
//go:norace
func (b *pbuf) filter() { b.filtered++ }

// dropped is the number of records the ring has dropped.
func (b *pbuf) dropped() uint64 { return atomic.LoadUint64(&b.drops) }

// read calls f with each record written and not yet read, oldest first, until f
// returns false (that record stays unread), then frees what it read. One reader at
// a time; f must copy what it keeps.
func (b *pbuf) read(f func(rec ctlproto.Record) bool) {
	b.next = b.head.Load()
	b.scan(f)
	b.commit()
}

// commit frees what scan read: a stream's, once the frame that carries it is sent,
// so that what is in the ring and not yet in the socket outlives the process.
func (b *pbuf) commit() { b.head.Store(b.next) }

// scan is read without freeing: from next (what the last scan read), which it
// advances. Freed by commit.
func (b *pbuf) scan(f func(rec ctlproto.Record) bool) {
	head, tail := b.next, b.tail.Load()
	for head < tail {
		pos := head & b.mask
		w := binary.LittleEndian.Uint64(b.b[pos:])
		n := w & 0xffff
		switch w >> 16 & 0xff {
		case ctlproto.PadRecord:
			head += n
			continue
		case ctlproto.LostRecord:
			b.met += binary.LittleEndian.Uint64(b.b[pos+8:])
			head += n
			continue
		}
		if !f(ctlproto.Record(b.b[pos : pos+n])) {
			break
		}
		head += n
	}
	b.next = head
}

// empty reports whether everything written has been read.
func (b *pbuf) empty() bool { return b.head.Load() == b.tail.Load() }
