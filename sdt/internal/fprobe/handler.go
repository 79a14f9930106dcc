package fprobe

import (
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/sdt/internal/goid"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Flags entryFast returns: what remains to be done in Go code that may reach a safe
// point (entrySlow), with the arguments in their spill slots.
const (
	slowHook = 1 // deliver the entry event to the hook
	slowRet  = 2 // the P has no return ring yet, or it is crowded: make room, then take the entry time
)

// entryFast is the first part of an entry probe, called by the entry stub with the
// register arguments only saved in its own frame: nosplit, and calls only nosplit code,
// so no safe point (nothing looks at this goroutine's stack or moves it before they
// are back). It counts the event (per P) and takes the entry time when the return is
// wanted, and says what needs entrySlow: nothing, when nobody consumes the events.
//
//go:nosplit
//go:norace
func entryFast(c *config, argp, g uintptr) uintptr {
	f := c.fn
	if load64(&guardMargin) == 0 {
		noteGuard(g)
	}
	pid := rt.ProcPin()
	var slow uintptr
	if load64(&f.hookOn) != 0 {
		// Every entry the probe sees is counted here, with its time: delivered,
		// nested or nobody's (quiet), and also when the hook is gone by the time
		// entrySlow looks (a return with an entry time always has its entry counted).
		f.count(pid, cEntries)
		if load64(&f.quiet) == 0 {
			slow = slowHook
		}
	}
	if load64(&f.wantRet) != 0 {
		// Folded at the return (retQuiet): no ring to make or to wait for.
		if load64(&f.retQuiet) == 0 && f.needsRing(pid) {
			slow |= slowRet
		} else {
			// stamp's body, not a call: from the stub down, the nosplit chain stays
			// within its limit with -N -l (arm64's body frame is the larger).
			// The depth from the stack's top is what a moved stack keeps.
			t, depth := ticks(), stackHi(g)-argp
			if s := f.stateOf(pid); s == nil || !s.enterIn(g, depth, t) {
				if !enterP(pid, g, depth, c, t) {
					enter(g, depth, c, int64(t))
				}
			}
		}
	}
	rt.ProcUnpin()
	return slow
}

// needsRing reports whether P pid has no return ring of f yet, or a crowded one;
// never while the returns go into no ring (a Ringless direct set).
//
//go:nosplit
//go:norace
func (f *Func) needsRing(pid int) bool {
	if load64(&f.ringless) != 0 {
		return false
	}
	r := f.ringOf(pid)
	return r == nil || f.crowded(r)
}

// stamp records the entry time of a call on P pid (pinned).
//
//go:nosplit
//go:norace
func stamp(pid int, g, depth uintptr, c *config) {
	t := ticks()
	if s := c.fn.stateOf(pid); s != nil && s.enterIn(g, depth, t) {
		return
	}
	if !enterP(pid, g, depth, c, t) {
		enter(g, depth, c, int64(t))
	}
}

// entrySlow is the rest of an entry probe, as entryFast said (slow), with the
// function's register arguments in their spill slots at argp, which the function's
// stack map 0 describes: a pointer argument stays alive, and is adjusted should the
// stack move while it runs. ctxt is the closure context (nil when not live), returned
// so that it too is adjusted. g is the running goroutine's descriptor.
func entrySlow(c *config, argp unsafe.Pointer, ctxt unsafe.Pointer, g uintptr, slow uintptr) unsafe.Pointer {
	f := c.function()
	if slow&slowRet != 0 {
		r := f.makeRing(rt.ProcPin())
		rt.ProcUnpin()
		if f.crowded(r) {
			// Before its entry time is taken: the wait is not the call's latency.
			r.waitForRoom(f, g)
		}
		pid := rt.ProcPin()
		stamp(pid, g, stackHi(g)-uintptr(argp), c)
		rt.ProcUnpin()
	}
	if slow&slowHook != 0 {
		if h := f.onEntry.Load(); h != nil {
			var a Args
			f.readArgs(&a, argp)
			// The hook does not keep a (EntryHook): on this stack, not the heap.
			callHook(f, *h, (*Args)(rt.Noescape(unsafe.Pointer(&a))), g)
		}
	}
	return ctxt
}

// callHook runs h unless this goroutine is already inside a hook: a hook that calls a
// probed function (its own, or another whose hook calls back) would recurse until
// the stack overflows. Such an event is counted (Stats.Nested), not delivered; so is
// one whose goroutine finds no room to be marked (16 goroutines of the same hash
// window in hooks at once).
func callHook(f *Func, h EntryHook, a *Args, g uintptr) {
	if load64(&f.pinned) != 0 {
		callPinned(f, h, a, g)
		return
	}
	i, ok := claimHook(g)
	if !ok {
		countPinned(f, cNested)
		return
	}
	defer release(i) // also when the hook panics or exits the goroutine
	h(f, a)
}

// callPinned runs h pinned to its P (Change.Pinned): a probed call it makes runs on
// the same P, so the P's own flag tells it is nested; no table shared by the cores.
// norace: the flag's writers are ordered by the P pin, which the race detector does
// not see.
//
//go:norace
func callPinned(f *Func, h EntryHook, a *Args, g uintptr) {
	pid := rt.ProcPin()
	if uint(pid) >= uint(len(hookP)) {
		rt.ProcUnpin()
		i, ok := claimHook(g) // a P beyond those counted
		if !ok {
			countPinned(f, cNested)
			return
		}
		defer release(i)
		h(f, a)
		return
	}
	on := &hookP[pid].on
	if *on != 0 {
		f.count(pid, cNested)
		rt.ProcUnpin()
		return
	}
	*on = 1
	defer unpinHook(on)
	h(f, a)
}

// unpinHook ends a pinned hook, also when it panics.
//
//go:norace
func unpinHook(on *uint64) {
	*on = 0
	rt.ProcUnpin()
}

// hookP[pid].on is 1 while P pid runs a pinned hook (callPinned).
var hookP = make([]struct {
	on uint64
	_  [56]byte
}, procs())

// release ends a hook's mark.
func release(i int) { atomic.StoreUint64(&inHook[i], 0) }

// countPinned counts one on the P the caller runs on.
func countPinned(f *Func, field uintptr) {
	f.count(rt.ProcPin(), field)
	rt.ProcUnpin()
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
var guardMargin uint64

// stackPreempt and the other poison values of g.stackguard0 are above any address.
const poison = ^uintptr(0) - 4096

// noteGuard sets guardMargin from g: a g starts with its stack bounds and then
// stackguard0 (runtime/runtime2.go).
//
//go:nosplit
//go:norace
func noteGuard(g uintptr) {
	lo := *(*uintptr)(rawptr.At(g))
	sg := *(*uintptr)(rawptr.At(g + 2*unsafe.Sizeof(uintptr(0))))
	if sg < poison && sg > lo && sg-lo < 1<<16 {
		store64(&guardMargin, uint64(sg-lo))
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
// nothing may look at this goroutine's stack, or move it, before they are back. For
// the same reason it runs on one P throughout: what it writes is that P's.
//
//go:nosplit
//go:norace
func retHandler(c *config, argp uintptr, g uintptr, regs uintptr) {
	f := c.fn
	if load64(&f.wantRet) == 0 {
		return
	}
	now := ticks()
	pid := rt.ProcPin()
	depth := stackHi(g) - argp
	if load64(&f.retQuiet) != 0 && f.foldIn(pid, g, depth, now) {
		rt.ProcUnpin()
		return
	}
	// The P's own slot first (the entry's P, most often), then the tables (the slot
	// was taken), then the other Ps' slots (the goroutine moved since its entry). As
	// few locals as may be: this frame is on the nosplit chain to the tables' search.
	t, ok := f.takeIn(pid, g, depth)
	if !ok {
		var found bool
		if t, found, ok = leaveP(pid, g, depth, c.fn.entry); !found {
			t, ok = leave(g, depth, c.fn.entry)
		}
		if !ok {
			t, ok = f.takeInAny(pid, g, depth)
		}
	}
	if !ok {
		f.count(pid, cNoEntry)
	}
	f.count(pid, cReturns)
	if load64(&f.retQuiet) != 0 {
		// Nobody reads the events: the count and the latency's fold are all.
		f.count(pid, cFolded)
		if ok {
			f.fold(pid, now-t)
		}
	} else {
		lat := int64(-1)
		if ok {
			lat = int64(now - t)
		}
		// Into the traces' shared buffers first (retDirect, once this returns):
		// there it outlives the process. Into the ring for the other consumers.
		// The count here, not in pendDirect: with -N -l a call deeper would pass the
		// nosplit limit on arm64.
		if f.pendDirect(pid, now, lat, g) {
			f.count(pid, cDirect)
		} else if !f.ringFor(pid).put(now, lat, goidOf(g), regs) {
			f.count(pid, cDropped)
		}
	}
	rt.ProcUnpin()
}

// ringFor is the ring a return on P pid puts into: the P's, or the function's shared
// ring for a P whose calls have not entered since the probe was placed.
//
//go:nosplit
//go:norace
func (f *Func) ringFor(pid int) *ring {
	if r := f.ringOf(pid); r != nil {
		return r
	}
	return f.shared
}

// goidOf is goroutine g's id, 0 if unknown.
//
//go:nosplit
//go:norace
func goidOf(g uintptr) uint64 {
	if off := goidAt; off != 0 { // set before wantRet
		return goid.At(g, off)
	}
	return 0
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
// ordinary Go: sync/atomic here; leave, nosplit, uses atomic.go's on the same words,
// assembly under -race: atomic_race_$GOARCH.s). norace: under the race detector
// those are invisible to it, and a slot's release by leave would look unsynchronised
// with its next claim.
//
//go:nosplit
//go:norace
func enter(g, depth uintptr, c *config, t int64) {
	h := latHash(g, depth)
	free := -1
	for i := 0; i < latProbe; i++ {
		s := slotAt(unsafe.Pointer(&lat), h+i, latSize)
		switch uintptr(load64(&s.g)) {
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
		s := slotAt(unsafe.Pointer(&lat), free, latSize)
		if cas64(&s.g, 0, uint64(g)) {
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
func leave(g, depth uintptr, c *config) (uint64, bool) {
	h := latHash(g, depth)
	for i := 0; i < latProbe; i++ {
		s := slotAt(unsafe.Pointer(&lat), h+i, latSize)
		if uintptr(load64(&s.g)) == g && s.depth == depth {
			if s.cfg != uintptr(unsafe.Pointer(c)) {
				return 0, false
			}
			t := s.t
			store64(&s.g, 0)
			return uint64(t), true
		}
	}
	return 0, false
}

// Return is one return event.
type Return struct {
	Ticks   uint64             // when the function returned, in the CPU counter's ticks (package consume's clock)
	Latency int64              // ns since the entry, -1 when the entry was not seen
	Goid    uint64             // the id of the goroutine that returned, 0 if unknown
	Results [returnRegs]uint64 // the first result registers, as words
}

// A ring holds return events until they are read. Each P has its own ring of a
// function (made by the first entry on that P that needs one), which only the
// goroutine running on that P writes, in nosplit code: no atomic read-modify-write.
// A function's shared ring takes the returns of Ps beyond those counted, written by
// any of them (a CAS on its head). Sequence numbers per slot tell the reader which
// events are whole. Latency holds ticks until ReadReturns converts it.
const ringSize = 256

// RingSize is how many return events of one function one P's ring holds.
const RingSize = ringSize

type ring struct {
	head uint64 // next to write
	_    [56]byte
	tail uint64 // next to read; only Read writes it
	// tail+1 when a call stopped waiting for the reader (waitForRoom), 0 before
	stuck uint64
	own   bool // one P's: a single writer
	_     [40]byte
	seq   [ringSize]uint64
	ev    [ringSize]Return
}

//go:nosplit
//go:norace
func (r *ring) put(now uint64, lat int64, id uint64, regs uintptr) bool {
	for {
		// tail first, as waiting
		t := load64(&r.tail)
		var h uint64
		if r.own {
			h = r.head
		} else {
			h = load64(&r.head)
		}
		if h-t >= ringSize {
			if load64(&r.tail) != t {
				continue // the reader made room while we looked
			}
			return false
		}
		if r.own {
			r.head = h + 1 // read only by its writer
		} else if !cas64(&r.head, h, h+1) {
			continue
		}
		e := r.evAt(h)
		e.Ticks, e.Latency, e.Goid = now, lat, id
		e.Results = *(*[returnRegs]uint64)(rawptr.At(regs))
		publish(r.seqAt(h), h+1)
		return true
	}
}

// waiting is how many events r holds (or are being written): the slots from the tail
// whose event is whole.
//
//go:nosplit
//go:norace
func (r *ring) waiting() uint64 {
	t := load64(&r.tail)
	n := uint64(0)
	// Whole events from the tail, up to a half ring: all crowded needs to know.
	for n < ringSize/2 && load64(r.seqAt(t+n)) == t+n+1 {
		n++
	}
	return n
}

// crowded reports whether r, one of f's rings, is half full, with a reader that has
// moved since a call last gave up waiting for it.
//
//go:nosplit
//go:norace
func (f *Func) crowded(r *ring) bool {
	t := load64(&r.tail)
	return load64(r.seqAt(t+ringSize/2-1)) == t+ringSize/2 && load64(&f.stuck) != load64(&f.nread)+1
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
	countPinned(f, cWaited)
	start := rt.Nanotime()
	moved, last := start, load64(&f.nread)
	for r.waiting() >= ringSize/4 {
		if !helpDrain(f, g) {
			runtime.Gosched()
		}
		now := rt.Nanotime()
		if t := load64(&f.nread); t != last {
			moved, last = now, t
		}
		if now-moved > int64(maxStall) {
			store64(&f.stuck, last+1)
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
	defer release(i)
	(*d)()
	return true
}

// ReadReturns moves the return events written so far into buf, in the order of their
// time (the rings of all Ps merged), and returns how many. Readers take turns: the
// function's Drain, run by a call (waitForRoom), and the goroutine that reads every
// function's rings.
//
//go:norace
func (f *Func) ReadReturns(buf []Return) int {
	f.reading.Lock()
	defer f.reading.Unlock()
	rs := f.readers[:0]
	for i := range f.pp {
		if r := f.ringOf(i); r != nil {
			rs = append(rs, r)
		}
	}
	if f.shared != nil {
		rs = append(rs, f.shared)
	}
	f.readers = rs
	if len(rs) == 0 {
		return 0
	}
	rate := nsPerTick()
	n := 0
	for n < len(buf) {
		var best *ring
		var bt uint64
		for _, r := range rs {
			t := load64(&r.tail)
			if load64(&r.seq[t%ringSize]) != t+1 {
				continue
			}
			if e := &r.ev[t%ringSize]; best == nil || e.Ticks < bt {
				best, bt = r, e.Ticks
			}
		}
		if best == nil {
			break
		}
		t := load64(&best.tail)
		e := best.ev[t%ringSize]
		publish(&best.tail, t+1) // only a reader writes it, under reading
		if e.Latency >= 0 {
			e.Latency = int64(float64(e.Latency) * rate)
		}
		buf[n] = e
		n++
	}
	if n > 0 {
		store64(&f.nread, f.nread+uint64(n))
	}
	return n
}
