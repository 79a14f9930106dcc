package fprobe

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/sdt/internal/goid"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// entryHandler is called by the entry stub with the function's register arguments in
// their spill slots at argp, which the function's stack map 0 describes: a pointer
// argument stays alive, and is adjusted should the stack move while it runs. ctxt is
// the closure context (nil when not live), returned so that it too is adjusted. g is
// the running goroutine's descriptor.
func entryHandler(c *config, argp unsafe.Pointer, ctxt unsafe.Pointer, g uintptr) unsafe.Pointer {
	f := c.function()
	if atomic.LoadUintptr(&guardMargin) == 0 {
		noteGuard(g)
	}
	if load64(&f.wantRet) != 0 {
		if r := f.crowded(); r != nil {
			// Before its entry time is taken: the wait is not the call's latency.
			r.waitForRoom(f, g)
		}
		// The depth from the stack's top is what a moved stack keeps.
		depth := stackHi(g) - uintptr(argp)
		enter(g, depth, c, rt.Nanotime())
	}
	if h := f.onEntry.Load(); h != nil {
		var a Args
		f.readArgs(&a, argp)
		callHook(f, *h, a, g)
	}
	return ctxt
}

// callHook runs h unless this goroutine is already inside a hook: a hook that calls a
// probed function (its own, or another whose hook calls back) would recurse until
// the stack overflows. Such an event is counted (Stats.Nested), not delivered; so is
// one whose goroutine finds no room to be marked (16 goroutines of the same hash
// window in hooks at once).
func callHook(f *Func, h EntryHook, a Args, g uintptr) {
	i, ok := claimHook(g)
	if !ok {
		add64(&f.stats.nested, 1)
		return
	}
	defer atomic.StoreUint64(&inHook[i], 0) // also when the hook panics or exits the goroutine
	add64(&f.stats.entries, 1)
	h(f, a)
}

// inHook holds the goroutines running a hook (their g), open addressing.
const hookSize = 1 << 12

var inHook [hookSize]uint64

// claimHook marks g as running a hook, in the window of hookWindow slots from g's
// hash (only g marks and unmarks itself, so its mark is always found there); false
// if it already is, or the window is full. Not on a nosplit path: sync/atomic's
// operations, which the compiler inlines.
func claimHook(g uintptr) (int, bool) {
	h := int((uint64(g) * 0x9E3779B97F4A7C15) >> (64 - 12))
	free := hookWindow // the first free slot's offset from h
	for n := 0; n < hookWindow; n++ {
		switch atomic.LoadUint64(&inHook[(h+n)&(hookSize-1)]) {
		case uint64(g):
			return 0, false
		case 0:
			free = min(free, n)
		}
	}
	for n := free; n < hookWindow; n++ {
		i := (h + n) & (hookSize - 1)
		if atomic.CompareAndSwapUint64(&inHook[i], 0, uint64(g)) {
			return i, true
		}
	}
	return 0, false
}

const hookWindow = 16

// guardMargin is g.stackguard0 - g.stack.lo when no preemption is requested: the
// stack's real guard, which the entry stub uses (stub_amd64.s); 0 until known. It is
// written once, with the value every goroutine has; the stub reads a word.
var guardMargin uintptr

// stackPreempt and the other poison values of g.stackguard0 are above any address.
const poison = ^uintptr(0) - 4096

// noteGuard sets guardMargin from g: a g starts with its stack bounds and then
// stackguard0 (runtime/runtime2.go).
func noteGuard(g uintptr) {
	lo := *(*uintptr)(rawptr.At(g))
	sg := *(*uintptr)(rawptr.At(g + 2*unsafe.Sizeof(uintptr(0))))
	if sg < poison && sg > lo && sg-lo < 1<<16 {
		atomic.StoreUintptr(&guardMargin, sg-lo)
	}
}

// stackHi is g.stack.hi: a g starts with its stack bounds (runtime/runtime2.go).
//
//go:nosplit
func stackHi(g uintptr) uintptr { return *(*uintptr)(rawptr.At(g + unsafe.Sizeof(uintptr(0)))) }

// function is the function c is a site of. c was written before the text that
// calls the stub with it was patched in; the race detector sees no edge from that
// write to this read (the patch, not a Go synchronisation, publishes c) and would
// report every first call after a Func is made. norace for this one read: what
// the hook then reads is published by f.onEntry, an atomic the detector does see.
//
//go:norace
func (c *config) function() *Func { return c.fn }

// retHandler is called by the return stub once the function's frame is gone; regs
// holds the result registers. It has no safe point, nor does anything it calls (all
// nosplit, or intrinsics): result registers that hold pointers are in no stack map, so
// nothing may look at this goroutine's stack, or move it, before they are back.
//
//go:nosplit
//go:norace
func retHandler(c *config, argp uintptr, g uintptr, regs uintptr) {
	f := c.fn
	if load64(&f.wantRet) == 0 {
		return
	}
	now := rt.Nanotime()
	lat := int64(-1)
	if t, ok := leave(g, stackHi(g)-argp, c.fn.entry); ok {
		lat = now - t
	} else {
		add64(&f.stats.noEntry, 1)
	}
	add64(&f.stats.returns, 1)
	r := loadRegs(regs)
	var id uint64
	if off := goidAt; off != 0 { // set before wantRet
		id = goid.At(g, off)
	}
	if !f.ring.put(lat, id, &r) { // ring set before wantRet
		add64(&f.stats.dropped, 1)
	}
}

// loadRegs copies the result registers the stub saved in its frame (norace: see
// readArgs).
//
//go:nosplit
//go:norace
func loadRegs(regs uintptr) [returnRegs]uint64 {
	return *(*[returnRegs]uint64)(rawptr.At(regs))
}

// The latency side table: the entry time of each call in flight whose function has
// a return probe, keyed by goroutine, depth below the stack's top, and function, so
// that a stack move changes nothing. Each slot is claimed by a goroutine with a CAS of
// its g and freed by it; a call that panics leaves its slot, which the next entry at
// the same depth of the same goroutine takes over (that call is over).
const latSize = 1 << 12

type latSlot struct {
	g     uint64
	depth uintptr
	cfg   uintptr
	t     int64
}

var lat [latSize]latSlot

// latProbe is how many slots from a key's hash a search looks at.
const latProbe = 16

func latHash(g, depth uintptr) int {
	return int(((uint64(g) ^ uint64(depth)<<20) * 0x9E3779B97F4A7C15) >> (64 - 12))
}

// enter records the entry time of a call (on the entry handler's path, which is
// ordinary Go: sync/atomic here; leave, nosplit, uses atomic_amd64.s's on the same
// words; norace: under the race detector those are invisible to it, and a slot's
// release by leave would look unsynchronised with its next claim).
//
//go:norace
func enter(g, depth uintptr, c *config, t int64) {
	h := latHash(g, depth)
	free := -1
	for i := 0; i < latProbe; i++ {
		s := &lat[(h+i)&(latSize-1)]
		switch uintptr(atomic.LoadUint64(&s.g)) {
		case g:
			if s.depth == depth { // a call at this depth that never returned, or this one again after morestack
				s.cfg, s.t = uintptr(unsafe.Pointer(c)), t
				return
			}
		case 0:
			if free < 0 {
				free = (h + i) & (latSize - 1)
			}
		}
	}
	for i := 0; i < latProbe && free >= 0; i++ {
		s := &lat[free]
		if atomic.CompareAndSwapUint64(&s.g, 0, uint64(g)) {
			s.depth, s.cfg, s.t = depth, uintptr(unsafe.Pointer(c)), t
			return
		}
		free = (free + 1) & (latSize - 1)
	}
	// No room: the return will have no latency (Stats.NoEntry).
}

// leave takes the entry time of the call of c's function at depth.
//
//go:nosplit
//go:norace
func leave(g, depth uintptr, c *config) (int64, bool) {
	h := latHash(g, depth)
	for i := 0; i < latProbe; i++ {
		s := &lat[(h+i)&(latSize-1)]
		if uintptr(load64(&s.g)) == g && s.depth == depth {
			if s.cfg != uintptr(unsafe.Pointer(c)) {
				return 0, false
			}
			t := s.t
			store64(&s.g, 0)
			return t, true
		}
	}
	return 0, false
}

// Return is one return event.
type Return struct {
	Latency int64              // ns since the entry, -1 when the entry was not seen
	Goid    uint64             // the id of the goroutine that returned, 0 if unknown
	Results [returnRegs]uint64 // the first result registers, as words
}

// ring holds a function's return events until they are read: written by any
// goroutine without a safe point (sequence numbers per slot), read by one.
const ringSize = 1024

// RingSize is how many return events of one function wait to be read, at most.
const RingSize = ringSize

type ring struct {
	head uint64 // next to write
	tail uint64 // next to read; only Read writes it
	// tail+1 when a call stopped waiting for the reader (waitForRoom), 0 before
	stuck   uint64
	reading sync.Mutex // ReadReturns's
	seq     [ringSize]uint64
	ev      [ringSize]Return
}

//go:nosplit
//go:norace
func (r *ring) put(lat int64, id uint64, res *[returnRegs]uint64) bool {
	for {
		// tail first, as waiting
		t := load64(&r.tail)
		h := load64(&r.head)
		if h-t >= ringSize {
			if load64(&r.tail) != t {
				continue // the reader made room while we looked
			}
			return false
		}
		if cas64(&r.head, h, h+1) {
			e := &r.ev[h%ringSize]
			e.Latency, e.Goid, e.Results = lat, id, *res
			store64(&r.seq[h%ringSize], h+1)
			return true
		}
	}
}

// waiting is how many events r holds (or are being written). The tail first: a head
// loaded before it may be older than the tail, and the difference would wrap.
//
//go:nosplit
//go:norace
func (r *ring) waiting() uint64 {
	t := load64(&r.tail)
	return load64(&r.head) - t
}

// crowded is f's return ring when it is half full, else nil. norace: the ring was
// set before wantRet, whose atomics (atomic_race_*.s) the race detector does not see.
//
//go:norace
func (f *Func) crowded() *ring {
	r := f.ring
	if r == nil {
		return nil
	}
	if r.waiting() < ringSize/2 || load64(&r.stuck) == load64(&r.tail)+1 {
		return nil // room, or a reader that has not moved since a call gave up on it
	}
	return r
}

// A call that finds its function's return ring half full makes room before it goes
// on: it reads the ring itself, through the function's Drain (Change), or else waits
// for the reader while the reader makes progress. A burst of calls faster than their
// returns are read is slowed to the pace of reading rather than losing events. A
// reader that is stuck costs a call at most maxStall, once: until the reader moves
// again, calls do not wait (crowded). No call waits more than maxWait in all;
// beyond that an event is dropped, and counted.
const (
	maxWait  = 100 * time.Millisecond
	maxStall = 50 * time.Millisecond
)

// waitForRoom makes room in r, f's return ring, down to a quarter, before this call
// of f goes on. An entry handler may yield: it is ordinary Go code on the calling
// goroutine g, whose arguments the function's stack map describes (entryHandler).
//
//go:norace
func (r *ring) waitForRoom(f *Func, g uintptr) {
	add64(&f.stats.waited, 1)
	start := rt.Nanotime()
	moved, last := start, load64(&r.tail)
	for r.waiting() >= ringSize/4 {
		if !helpDrain(f, g) {
			runtime.Gosched()
		}
		now := rt.Nanotime()
		if t := load64(&r.tail); t != last {
			moved, last = now, t
		}
		if now-moved > int64(maxStall) {
			store64(&r.stuck, last+1)
			return
		}
		if now-start > int64(maxWait) {
			return
		}
	}
}

// helpDrain runs f's Drain on goroutine g; false when f has none or g is running a
// hook already (a Drain whose consumers call a probed function: it would recurse).
func helpDrain(f *Func, g uintptr) bool {
	d := f.onCrowded.Load()
	if d == nil {
		return false
	}
	i, ok := claimHook(g)
	if !ok {
		return false
	}
	defer atomic.StoreUint64(&inHook[i], 0)
	(*d)()
	return true
}

// ReadReturns moves the return events written so far into buf and returns how many.
// Readers take turns: the function's Drain, run by a call (waitForRoom), and the
// goroutine that reads every function's ring.
//
//go:norace
func (f *Func) ReadReturns(buf []Return) int {
	r := f.ring // set once (Set), before any call could write to it
	if r == nil {
		return 0
	}
	r.reading.Lock()
	defer r.reading.Unlock()
	n := 0
	for n < len(buf) {
		t := load64(&r.tail)
		if load64(&r.seq[t%ringSize]) != t+1 {
			break
		}
		buf[n] = r.ev[t%ringSize]
		store64(&r.tail, t+1)
		n++
	}
	return n
}
