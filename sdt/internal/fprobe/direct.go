package fprobe

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Return events written by the return path itself into a trace's per-P buffers
// (SetDirect), not put into the function's ring for a drain to deliver later: those
// buffers are memory the traced process shares with sdtctl, so a return written
// there outlives the process that made it (an exit, a panic, SIGKILL), where one
// waiting in a ring of the process's own memory dies with it. The buffers keep
// their own accounting: a record that finds no room is counted dropped in the
// buffer's words (ctlproto's header), as a fire of the trace's own is.
//
// The record is ctlproto's, as package consume writes it for a run-time return
// (registry's emitReturns): the latency in ns, then each result as its kind says.
// The writer is nosplit with no safe point, as the rest of the return path: result
// registers that hold pointers are in no stack map.

// DirectBuf is one P's buffer of a trace as the return path writes it: the ring and
// the words of package consume's pbuf, which the return path and the trace's own
// writers share. Both write it only pinned to its P, with no safe point between
// reserving room and publishing the record, so never two at once.
type DirectBuf struct {
	Ring                          unsafe.Pointer // the ring's first byte
	Mask                          uint64         // its size - 1 (a power of two)
	Tail, Writing, HdrDrops, Head *uint64        // the header's words (ctlproto.RingHeader); Head the reader's
	Seen, Drops, Marked           *uint64        // the writers' own words (pbuf's)
	Filtered                      *uint64        // returns the trace's predicate rejected (pbuf's, the writers')
}

// DirectBufs is one trace's buffers as its owner (package consume) publishes them:
// by P, grown as Ps are added, and the probes whose records it has described.
type DirectBufs struct {
	bufs  unsafe.Pointer // *[]DirectBuf, by P
	known unsafe.Pointer // *[]uint64: bit i set once probe i's records are described; nil: write nothing
	where unsafe.Pointer // *[]*Pred: by probe id, the predicate a return must pass (where.go); nil: none
	lost  *uint64        // returns on a P with no buffer (atomic): the trace's count of them
	// the trace has a predicate: only the first 64 of a function's sets run one
	// (DirectSet.Bufs, retWhere's mask), a later one leaves the returns to the ring
	filters bool
}

// NewDirectBufs makes a trace's DirectBufs; lost is where it counts the events of a
// P with no buffer; filters: the trace has a predicate (SetWhere).
func NewDirectBufs(lost *uint64, filters bool) *DirectBufs {
	return &DirectBufs{lost: lost, filters: filters}
}

// Filters reports whether the trace has a predicate, which only the first 64
// traces of a DirectSet's Bufs may have.
func (d *DirectBufs) Filters() bool { return d.filters }

// SetWhere publishes the predicates of the trace's probes, by probe id (nil: every
// return of that probe): call it before SetKnown names the probes.
func (d *DirectBufs) SetWhere(byID []*Pred) {
	atomic.StorePointer(&d.where, unsafe.Pointer(&byID))
}

// SetBufs publishes the trace's buffers, by P.
func (d *DirectBufs) SetBufs(bufs []DirectBuf) {
	atomic.StorePointer(&d.bufs, unsafe.Pointer(&bufs))
}

// SetKnown publishes the probes whose records the trace has described (their ids):
// a return of another is not written, as a fire the trace was not told of is not.
// nil stops every write: call it, then wait for the writers (a stop of the world),
// before the buffers are unmapped.
func (d *DirectBufs) SetKnown(ids []uint32) {
	if ids == nil {
		atomic.StorePointer(&d.known, nil)
		return
	}
	var bits []uint64
	for _, id := range ids {
		for int(id/64) >= len(bits) {
			bits = append(bits, 0)
		}
		bits[id/64] |= 1 << (id % 64)
	}
	atomic.StorePointer(&d.known, unsafe.Pointer(&bits))
}

// Argument kinds of a DirectArg: registry's Kind values (and ctlproto's).
const (
	DirectInt    = ctlproto.ValInt
	DirectUint   = ctlproto.ValUint
	DirectBool   = ctlproto.ValBool
	DirectFloat  = ctlproto.ValFloat
	DirectString = ctlproto.ValString
)

// DirectArg is how one result is written: from result word Word, of kind Kind
// (Size bytes: 4 is a float32, or an int to widen), or as an interface's nil or not.
type DirectArg struct {
	Word, Kind, Size uint8
	Iface            bool // written as the string "<nil>" or "non-nil"
}

// DirectSet is where the return events of a function are written by its return
// path, besides (or instead of) its ring: immutable once set (SetDirect).
type DirectSet struct {
	// Ringless: nobody else consumes the returns: none goes into the ring.
	Ringless bool
	Probe    uint32      // the return probe's id, as the traces know it
	Site     uint64      // the site the records name: the function's entry
	Results  []DirectArg // after the latency; at most MaxDirectResults
	Bufs     []*DirectBufs
	// Filters: some of Bufs (among the first 64) has a predicate (retWhere)
	Filters bool
}

// MaxDirectResults is the most results a direct record carries (a probe's six
// arguments, the latency first).
const MaxDirectResults = 5

// SetDirect says where f's return events are written by the return path (nil:
// none, every one into the ring). It takes effect at once.
func (f *Func) SetDirect(s *DirectSet) {
	mu.Lock()
	defer mu.Unlock()
	if s != nil {
		startRate()
		if pending == nil {
			pending = make([]pendingRet, maxProcs)
		}
		if len(s.Results) > MaxDirectResults {
			s.Results = s.Results[:MaxDirectResults]
		}
	}
	old := (*DirectSet)(loadPtr(&f.direct))
	was, filtered := old != nil, old != nil && old.Filters
	if s != nil && !was {
		add64(&directOn, 1)
	}
	if s != nil && s.Filters && !filtered {
		add64(&whereOn, 1)
	}
	atomic.StorePointer(&f.direct, unsafe.Pointer(s))
	store64(&f.ringless, b2u(s != nil && s.Ringless))
	direct, where := s == nil && was, filtered && (s == nil || !s.Filters)
	if direct || where {
		// Not before every return that took the set has written its event: one
		// that left it pending has its P pinned until retDirect, so a stop of the
		// world waits for it (runtime.Stack's, as package consume's quiesce).
		go func() {
			runtime.Stack(nil, true)
			if direct {
				add64(&directOn, ^uint64(0))
			}
			if where {
				add64(&whereOn, ^uint64(0))
			}
		}()
	}
}

// The return path writes a direct record in steps, so that no nosplit chain from
// the return stub outgrows what a nosplit chain may use (the linker's check, with
// -N -l too): retHandler leaves the event in its P's pendingRet (pendDirect), and
// retBody, once it is back, calls retWhere when some set has a predicate (whereOn:
// it runs the traces' predicates, where.go), then retDirect, which writes it; only
// while some function has a direct set (directOn), so that a return nobody traces
// pays one load for it. pendDirect pins the P once more, and retDirect unpins it:
// between the two the goroutine is neither preempted nor moved, no other runs on
// the P, and no collection ends (the set is held by a word only).

// directOn is how many functions have a direct set (or had one, until every
// return that took it has written it); retBody reads it. whereOn is how many of
// those sets have Filters: retBody calls retWhere only then.
var directOn, whereOn uint64

// maxProcs is the most Ps the runtime makes (its _MaxGomaxprocs): every P's id
// has a pendingRet.
const maxProcs = 1 << 10

// pendingRet is one P's return event between retHandler and retDirect.
type pendingRet struct {
	// the *DirectSet, 0: none pending. Not a pointer: a store into the heap from
	// here may have no write barrier (a call into the runtime). Until retDirect
	// has written it the P is pinned: no collection can end and free it.
	set  uintptr
	now  uint64
	g    uintptr // the goroutine; its id once ready has read it
	lat  int64   // in counter ticks; in ns once ready has converted it (-1: unseen)
	skip uint64  // bit i: the set's Bufs[i] does not take the event (its predicate, retWhere)
	done uint64  // g and lat read (ready): by retWhere, or else retDirect
	// the event's arguments as the predicates read them (argsOf): n of them
	n     uint8
	kinds [1 + MaxDirectResults]uint8
	vals  [1 + MaxDirectResults]uint64
	_     [24]byte
}

var pending []pendingRet // made by the first SetDirect, before any set is published

// pendDirect leaves a return on P pid for retDirect when f has a direct set, and
// reports whether that is all (Ringless: no ring; the caller counts it).
//
//go:nosplit
//go:norace
func (f *Func) pendDirect(pid int, now uint64, lat int64, g uintptr) bool {
	s := (*DirectSet)(loadPtr(&f.direct))
	if s == nil || uint(pid) >= uint(len(pending)) {
		return false
	}
	p := (*pendingRet)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(pending)), uintptr(pid)*unsafe.Sizeof(pendingRet{})))
	p.now, p.lat, p.g, p.set = now, lat, g, uintptr(unsafe.Pointer(s))
	rt.ProcPin() // until retDirect has written it: directOn stays above 0 till then
	return s.Ringless
}

// retDirect writes the return event pending on its P (pendDirect) into each
// buffer of its set; regs holds the result registers. Called by retBody after
// retHandler (and retWhere), with no safe point between. One level of calls below
// it, and those call little: with -N -l every helper is a frame of its own.
//
//go:nosplit
//go:norace
func retDirect(regs uintptr) {
	pid := rt.ProcPin()
	if uint(pid) < uint(len(pending)) {
		p := (*pendingRet)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(pending)), uintptr(pid)*unsafe.Sizeof(pendingRet{})))
		if p.set != 0 {
			s := (*DirectSet)(rawptr.At(p.set))
			p.set = 0
			rt.ProcUnpin() // pendDirect's
			p.ready()
			res := rawptr.At(regs)
			for i := 0; i < len(s.Bufs); i++ {
				if p.skip>>uint(i)&1 != 0 {
					continue // filtered (retWhere)
				}
				b := (*(**DirectBufs)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.Bufs)), uintptr(i)*unsafe.Sizeof(uintptr(0))))).buf(s.Probe, pid)
				if b == nil {
					continue
				}
				need := s.size(res)
				if off, end, ok := b.reserve(need); ok {
					s.fill(unsafe.Add(b.Ring, off), need, p, res)
					publish(b.Tail, end)
				}
			}
		}
	}
	rt.ProcUnpin()
}

// buf is d's buffer of P pid for a record of probe id: nil when d has not described
// the probe, or has no buffer for the P (the event counted lost).
//
//go:nosplit
//go:norace
func (d *DirectBufs) buf(id uint32, pid int) *DirectBuf {
	kp := (*[]uint64)(loadPtr(&d.known))
	if kp == nil || uintptr(id/64) >= uintptr(len(*kp)) ||
		*(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(*kp)), uintptr(id/64)*8))&(1<<(id%64)) == 0 {
		return nil
	}
	bp := (*[]DirectBuf)(loadPtr(&d.bufs))
	if bp == nil || uint(pid) >= uint(len(*bp)) {
		add64(d.lost, 1)
		return nil
	}
	return (*DirectBuf)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(*bp)), uintptr(pid)*unsafe.Sizeof(DirectBuf{})))
}

// The texts an interface result is carried as (registry's setWord's).
const (
	nilText    = "<nil>"
	nonNilText = "non-nil"
)

// size is the bytes of s's record of a return whose result words are at res.
//
//go:nosplit
//go:norace
func (s *DirectSet) size(res unsafe.Pointer) uint64 {
	n := uint64(ctlproto.RecordHead + 8 + 8*len(s.Results))
	for i := 0; i < len(s.Results); i++ {
		a := (*DirectArg)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.Results)), uintptr(i)*unsafe.Sizeof(DirectArg{})))
		switch {
		case !a.Iface:
		case *(*uint64)(unsafe.Add(res, uintptr(a.Word%returnRegs)*8)) == 0:
			n += uint64(len(nilText))
		default:
			n += uint64(len(nonNilText))
		}
	}
	return (n + 7) &^ 7
}

// fill writes s's record of return p, need bytes, at r (ctlproto's layout, as
// consume's writeRecord writes it): the latency in ns, then each result as its
// kind says (registry's setWord: a float32 widened, a small signed integer
// sign-extended, an interface nil or not). It calls nothing.
//
//go:nosplit
//go:norace
func (s *DirectSet) fill(r unsafe.Pointer, need uint64, p *pendingRet, res unsafe.Pointer) {
	*(*[4]uint64)(r) = [4]uint64{need | uint64(1+len(s.Results))<<16 | uint64(s.Probe)<<32, s.Site, p.now, uint64(p.g)}
	*(*int64)(unsafe.Add(r, ctlproto.RecordHead)) = p.lat     // in ns (retWhere)
	at := uintptr(ctlproto.RecordHead + 8 + 8*len(s.Results)) // the strings' bytes
	for i := 0; i < len(s.Results); i++ {
		a := (*DirectArg)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.Results)), uintptr(i)*unsafe.Sizeof(DirectArg{})))
		w := *(*uint64)(unsafe.Add(res, uintptr(a.Word%returnRegs)*8))
		switch {
		case a.Iface:
			t := nilText
			if w != 0 {
				t = nonNilText
			}
			for k := 0; k < len(t); k++ {
				*(*byte)(unsafe.Add(r, at+uintptr(k))) = *(*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(t)), k))
			}
			at += uintptr(len(t))
			w = uint64(len(t))
		case a.Kind == DirectFloat && a.Size == 4:
			w32 := uint32(w)
			f := float64(*(*float32)(unsafe.Pointer(&w32)))
			w = *(*uint64)(unsafe.Pointer(&f))
		case a.Kind == DirectInt && a.Size < 8 && a.Size > 0:
			sh := 64 - 8*uint(a.Size)
			w = uint64(int64(w<<sh) >> sh)
		}
		*(*uint64)(unsafe.Add(r, ctlproto.RecordHead+8+8*uintptr(i))) = w
	}
	for ; at < uintptr(need); at++ {
		*(*byte)(unsafe.Add(r, at)) = 0
	}
}

// reserve finds room for a record of need bytes in b and returns where it starts
// and where the ring ends after it (published once written); false, counted
// dropped, when the ring is full. consume's pbuf.reserveSlow, the same words.
//
//go:nosplit
//go:norace
func (b *DirectBuf) reserve(need uint64) (off, end uint64, ok bool) {
	tail := load64(b.Tail)
	size := b.Mask + 1
	var lost uint64
	if *b.Drops != *b.Marked {
		lost = lostRecord
	}
	pos := tail & b.Mask
	var pad uint64
	if pos+lost+need > size {
		pad = size - pos
	}
	if tail+pad+lost+need-*b.Seen > size {
		*b.Seen = load64(b.Head)
		if tail+pad+lost+need-*b.Seen > size {
			*b.Drops++
			*b.HdrDrops = *b.Drops
			return 0, 0, false
		}
	}
	if pad > 0 {
		*(*uint64)(unsafe.Add(b.Ring, pos)) = pad | ctlproto.PadRecord<<16
		pos = 0
	}
	if lost > 0 {
		*(*uint64)(unsafe.Add(b.Ring, pos)) = lostRecord | ctlproto.LostRecord<<16
		*(*uint64)(unsafe.Add(b.Ring, pos+8)) = *b.Drops - *b.Marked
		*b.Marked = *b.Drops
		pos += lostRecord
	}
	end = tail + pad + lost + need
	*b.Writing = end // what the end cuts short is counted, not read (ctlproto.RingWriting)
	return pos, end, true
}

// lostRecord is the bytes of a ctlproto.LostRecord.
const lostRecord = 16

// rateBits is the counter's ns per tick (float64 bits) as last measured: what the
// return path converts a direct record's latency with. Measured over a short wait
// when the first direct set is made (startRate), then at each ReadRate.
var (
	rateBits uint64
	rateOnce sync.Once
)

// startRate measures the counter's rate, once, over at least rateWait.
func startRate() {
	rateOnce.Do(func() {
		startClock()
		t0, m0 := clockPair()
		for rt.Nanotime()-m0 < rateWait {
		}
		t1, m1 := clockPair()
		r := 1.0
		if t1 > t0 && m1 > m0 {
			r = float64(m1-m0) / float64(t1-t0)
		}
		store64(&rateBits, math.Float64bits(r))
	})
}

// rateWait is how long startRate measures.
const rateWait = 200_000 // ns

// ReadRate measures the counter's rate again (nsPerTick: the longer the process has
// run, the closer), for the return path's latencies: the drain's, now and then.
func ReadRate() { nsPerTick() }
