package fprobe

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// What a probed call writes is its P's own: a function's counts and its return ring,
// and the table of entry times, are kept per P, padded apart, so that the hot path
// has no atomic read-modify-write and no cache line two cores write. A probe's
// handler runs pinned to its P (nosplit code is never preempted; the entry's Go
// handler pins itself), so a P's state has one writer at a time: plain increments,
// and a release store where a reader must see what was written before. A P beyond
// those counted when the state was made (GOMAXPROCS raised since) counts on shared
// atomics, puts into a shared ring and keeps entry times in the shared table: slower,
// never wrong.

// nprocs is how many Ps have state of their own: GOMAXPROCS or the CPUs, whichever is
// more, when the first probe was switched on.
var (
	nprocsOnce sync.Once
	nprocs     int
)

func procs() int {
	nprocsOnce.Do(func() { nprocs = max(runtime.GOMAXPROCS(0), runtime.NumCPU(), 1) })
	return nprocs
}

// pstate is one P's share of a function's state, two cache lines of its own.
type pstate struct {
	c counters
	// not last: a last field of no size would pad the state past 128 bytes
	_    [128 - unsafe.Sizeof(counters{}) - 8 - 24]byte
	ring unsafe.Pointer // *ring: this P's return ring, made by the first entry that needs it
	// The entry time of one call of the function in flight, taken on this P: a slot
	// of the latency tables below that needs no hash and no search (most returns
	// come on the P of their entry, with no other call of the function between).
	// Claimed and freed as a table's slot is; inG 0 when free.
	inG, inDepth, inT uint64
}

// enterIn records the entry time t of g's call at depth in P's slot s: true when the
// slot was free or held g's call at that depth (one that never returned, or this one
// again after morestack), false when another call holds it.
//
//go:nosplit
//go:norace
func (s *pstate) enterIn(g, depth uintptr, t uint64) bool {
	switch uintptr(load64(&s.inG)) {
	case 0:
		s.inDepth, s.inT = uint64(depth), t
		publish(&s.inG, uint64(g)) // the key last: a reader that sees it sees the rest
		return true
	case g:
		if s.inDepth == uint64(depth) {
			s.inT = t
			return true
		}
	}
	return false
}

// takeIn takes the entry time of g's call at depth from P p's slot of f, if it holds
// it. Only g itself writes a slot that holds g.
//
//go:nosplit
//go:norace
func (f *Func) takeIn(p int, g, depth uintptr) (uint64, bool) {
	s := f.stateOf(p)
	if s == nil || uintptr(load64(&s.inG)) != g || s.inDepth != uint64(depth) {
		return 0, false
	}
	t := s.inT
	publish(&s.inG, 0) // after reading t
	return t, true
}

// foldIn folds a return of g's call at depth at time now on P pid, when P's slot
// holds its entry (most returns whose events nobody reads): what retHandler does for
// it, in one place with no search (its own function: a smaller frame for the return
// path's longer chains).
//
//go:nosplit
//go:norace
func (f *Func) foldIn(pid int, g, depth uintptr, now uint64) bool {
	s := f.stateOf(pid)
	if s == nil || uintptr(load64(&s.inG)) != g || s.inDepth != uint64(depth) {
		return false
	}
	d := now - s.inT
	publish(&s.inG, 0) // after reading inT
	if int64(d) < 0 {
		d = 0 // counters of two cores a few ticks apart
	}
	s.c.returns++
	s.c.folded++
	s.c.lat.add(d)
	return true
}

// takeInAny is takeIn from any P's slot but pid's (g moved since its entry); takeIn's
// body, not a call, so that the nosplit chain stays within its limit with -N -l.
//
//go:nosplit
//go:norace
func (f *Func) takeInAny(pid int, g, depth uintptr) (uint64, bool) {
	for p := 0; p < len(f.pp); p++ {
		s := (*pstate)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.pp)), uintptr(p)*unsafe.Sizeof(pstate{})))
		if p != pid && uintptr(load64(&s.inG)) == g && s.inDepth == uint64(depth) {
			t := s.inT
			publish(&s.inG, 0) // after reading t
			return t, true
		}
	}
	return 0, false
}

// counters are a function's counts; per P, or shared (atomics) for Ps beyond nprocs.
// folded counts the returns folded (SetReturnQuiet) and lat the latencies of those
// whose entry time was known, in ticks.
type counters struct {
	entries, returns, noEntry, dropped, nested, waited uint64
	folded, direct                                     uint64
	lat                                                latFold
}

// latFold is a sum of latencies in ticks: how many, their sum, the least and the
// greatest (min holds the least plus one: 0 before the first).
type latFold struct{ n, sum, min, max uint64 }

// add folds d into a P's own l: one writer, the P's, plain stores of whole words.
//
//go:nosplit
//go:norace
func (l *latFold) add(d uint64) {
	if l.min == 0 || d+1 < l.min {
		l.min = d + 1
	}
	if d > l.max {
		l.max = d
	}
	l.sum += d
	l.n++
}

// stateOf is P pid's state of f; nil for a P beyond those counted, or before f's state
// is made (Set makes it before writing any call).
//
//go:nosplit
//go:norace
func (f *Func) stateOf(pid int) *pstate {
	if uint(pid) < uint(len(f.pp)) {
		return (*pstate)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(f.pp)), uintptr(pid)*unsafe.Sizeof(pstate{})))
	}
	return nil
}

// count adds one to counter field (an offset in counters) of P pid: plain when the P
// has state, pinned by the caller; else on the shared atomic.
//
//go:nosplit
//go:norace
func (f *Func) count(pid int, field uintptr) {
	if s := f.stateOf(pid); s != nil {
		p := (*uint64)(unsafe.Add(unsafe.Pointer(&s.c), field))
		*p++
		return
	}
	add64((*uint64)(unsafe.Add(unsafe.Pointer(&f.over), field)), 1)
}

const (
	cEntries = unsafe.Offsetof(counters{}.entries)
	cReturns = unsafe.Offsetof(counters{}.returns)
	cNoEntry = unsafe.Offsetof(counters{}.noEntry)
	cDropped = unsafe.Offsetof(counters{}.dropped)
	cNested  = unsafe.Offsetof(counters{}.nested)
	cWaited  = unsafe.Offsetof(counters{}.waited)
	cFolded  = unsafe.Offsetof(counters{}.folded)
	cDirect  = unsafe.Offsetof(counters{}.direct)
)

// fold adds latency d (ticks, the difference of two counter reads) of a return on P pid to f's fold: plain on the P's own
// state, pinned by the caller; else on the shared one, whose min and max are a CAS
// loop (a P beyond those counted: rare).
//
//go:nosplit
//go:norace
func (f *Func) fold(pid int, d uint64) {
	if int64(d) < 0 {
		d = 0 // counters of two cores a few ticks apart
	}
	if s := f.stateOf(pid); s != nil {
		s.c.lat.add(d)
		return
	}
	l := &f.over.lat
	for m := load64(&l.min); m == 0 || d+1 < m; m = load64(&l.min) {
		if cas64(&l.min, m, d+1) {
			break
		}
	}
	for m := load64(&l.max); d > m; m = load64(&l.max) {
		if cas64(&l.max, m, d) {
			break
		}
	}
	add64(&l.sum, d)
	add64(&l.n, 1)
}

// sum is f's counts over every P.
//
//go:norace
func (f *Func) sum() counters {
	var t counters
	add := func(c *counters) {
		t.entries += load64(&c.entries)
		t.returns += load64(&c.returns)
		t.noEntry += load64(&c.noEntry)
		t.dropped += load64(&c.dropped)
		t.nested += load64(&c.nested)
		t.waited += load64(&c.waited)
		t.folded += load64(&c.folded)
		t.direct += load64(&c.direct)
		if n := load64(&c.lat.n); n > 0 {
			t.lat.n += n
			t.lat.sum += load64(&c.lat.sum)
			if m := load64(&c.lat.min); m != 0 && (t.lat.min == 0 || m < t.lat.min) {
				t.lat.min = m
			}
			t.lat.max = max(t.lat.max, load64(&c.lat.max))
		}
	}
	for i := range f.pp {
		add(&f.pp[i].c)
	}
	add(&f.over)
	return t
}

// ringOf is P pid's return ring of f, nil if it has none yet.
//
//go:nosplit
//go:norace
func (f *Func) ringOf(pid int) *ring {
	if s := f.stateOf(pid); s != nil {
		return (*ring)(loadPtr(&s.ring))
	}
	return f.shared
}

// makeRing gives P pid its ring of f (ordinary Go: the entry's slow path).
func (f *Func) makeRing(pid int) *ring {
	s := f.stateOf(pid)
	if s == nil {
		return f.shared
	}
	if r := (*ring)(atomic.LoadPointer(&s.ring)); r != nil {
		return r
	}
	r := &ring{own: true}
	// Published before any return can read it: the return handler loads the word.
	atomic.StorePointer(&s.ring, unsafe.Pointer(r))
	return r
}

// The entry times of calls in flight whose function has a return probe, per P, keyed
// by goroutine, depth below its stack's top (which a stack move keeps) and the
// function's entry config. An entry writes into the table of the P it runs on, a
// return looks in its own P's first and, when its goroutine moved since its entry, in
// the others'. Only the P's running goroutine claims a free slot (g 0 to its g), and
// only the goroutine a slot names frees it, from whichever P: so no two writers ever
// race for a slot, and plain stores do, a release store publishing the key last.
// A call that panics leaves its slot; the next entry of its goroutine at that depth
// on that P takes it over.
const (
	latPerP   = 512
	latWindow = 16
)

type latTable struct {
	s [latPerP]latSlot
	_ [64]byte
}

var (
	latOnce sync.Once
	latP    []latTable // made before the first return probe is switched on
)

func makeLat() { latOnce.Do(func() { latP = make([]latTable, procs()) }) }

// enterP records the entry time t of a call on P pid; false when pid has no table, or
// its window is full (the caller then uses the shared table).
//
//go:nosplit
//go:norace
func enterP(pid int, g, depth uintptr, c *config, t uint64) bool {
	if uint(pid) >= uint(len(latP)) {
		return false
	}
	tab := latOf(pid)
	h := latHash(g, depth) & (latPerP - 1)
	free := -1
	// The first free slot or the first of this goroutine at this depth, whichever
	// comes first: leaveIn, which searches in the same order, finds this one before
	// any other of the same key further on.
	for i := 0; i < latWindow; i++ {
		s := slotAt(unsafe.Pointer(tab), h+i, latPerP)
		switch uintptr(load64(&s.g)) {
		case g:
			if s.depth == depth { // a call at this depth that never returned, or this one again after morestack
				s.cfg, s.t = uintptr(unsafe.Pointer(c)), int64(t)
				return true
			}
		case 0:
			free = (h + i) & (latPerP - 1)
		}
		if free >= 0 {
			break
		}
	}
	if free < 0 {
		return false
	}
	s := slotAt(unsafe.Pointer(tab), free, latPerP)
	s.depth, s.cfg, s.t = depth, uintptr(unsafe.Pointer(c)), int64(t)
	publish(&s.g, uint64(g))
	return true
}

// leaveP takes the entry time of the call of c's function at depth of goroutine g,
// running on P pid: from pid's table, else from another P's (its goroutine moved
// since its entry). found is false when no table has its key with c (the caller then
// looks in the shared one); ok is found. One function, not one per table: the nosplit
// chain from the return stub stays short.
//
//go:nosplit
//go:norace
func leaveP(pid int, g, depth uintptr, c *config) (t uint64, found, ok bool) {
	n := len(latP)
	h := latHash(g, depth) & (latPerP - 1)
	for k := 0; k < n; k++ {
		p := pid + k // pid's own table first
		if p >= n {
			p -= n
		}
		if uint(pid) >= uint(n) {
			p = k
		}
		tab := unsafe.Pointer(latOf(p))
		for i := 0; i < latWindow; i++ {
			s := slotAt(tab, h+i, latPerP)
			if uintptr(load64(&s.g)) == g && s.depth == depth {
				if s.cfg != uintptr(unsafe.Pointer(c)) {
					// Another function's call at this depth that never returned
					// (its probe taken away, or it panicked): this call's entry
					// is elsewhere, another P's table or the shared one.
					break
				}
				t := uint64(s.t)
				publish(&s.g, 0) // after reading t: a load is not moved after a later store
				return t, true, true
			}
		}
	}
	return 0, false, false
}

// The ticks of return events become nanoseconds at the rate measured between a pair
// of the counter and the runtime's clock read when the first return probe was
// switched on and one read when they are converted: the longer a process runs, the
// closer (package consume converts a trace's ticks the same way).
var clk0 struct {
	once  sync.Once
	ticks uint64
	mono  int64
}

func startClock() {
	clk0.once.Do(func() { clk0.ticks, clk0.mono = clockPair() })
}

func clockPair() (uint64, int64) {
	t0 := ticks()
	m := rt.Nanotime()
	t1 := ticks()
	return t0 + (t1-t0)/2, m
}

// nsPerTick is the counter's rate as of now.
func nsPerTick() float64 {
	startClock()
	t, m := clockPair()
	if dt := t - clk0.ticks; int64(dt) > 0 && m > clk0.mono {
		r := float64(m-clk0.mono) / float64(dt)
		if m-clk0.mono >= rateWait {
			store64(&rateBits, math.Float64bits(r)) // the return path's, for direct records
		}
		return r
	}
	return 1
}

// The nosplit paths index without bounds checks: a failed check would call the
// runtime's panic functions, beyond the stack a nosplit chain may use (and a panic
// in the return path would lose the result registers). Callers keep indices in range.

// latOf is P pid's table; pid < len(latP).
//
//go:nosplit
//go:norace
func latOf(pid int) *latTable {
	return (*latTable)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(latP)), uintptr(pid)*unsafe.Sizeof(latTable{})))
}

// slotAt is slot i, modulo n (a power of two), of a latency table of n slots at tab.
//
//go:nosplit
func slotAt(tab unsafe.Pointer, i, n int) *latSlot {
	return (*latSlot)(unsafe.Add(tab, uintptr(i&(n-1))*unsafe.Sizeof(latSlot{})))
}

//go:nosplit
func (r *ring) evAt(i uint64) *Return {
	return (*Return)(unsafe.Add(unsafe.Pointer(&r.ev), uintptr(i%ringSize)*unsafe.Sizeof(Return{})))
}

//go:nosplit
func (r *ring) seqAt(i uint64) *uint64 {
	return (*uint64)(unsafe.Add(unsafe.Pointer(&r.seq), uintptr(i%ringSize)*8))
}

// Folded is what f's returns folded since Lookup (SetReturnQuiet): how many, and the
// latencies of those whose entry was seen (Stats.NoEntry counts the others).
type Folded struct {
	Returns  int64 // returns folded: counted in Stats.Returns, never put into a ring
	Count    int64 // of them, those with a latency
	Sum      int64 // ns, their latencies' sum
	Min, Max int64 // ns; 0 when Count is 0
}

// Folded returns f's folded returns, the latencies in ns at the counter's rate as of now.
func (f *Func) Folded() Folded {
	c := f.sum()
	out := Folded{Returns: int64(c.folded), Count: int64(c.lat.n)}
	if c.lat.n > 0 {
		rate := nsPerTick()
		out.Sum = int64(float64(c.lat.sum) * rate)
		out.Min = int64(float64(c.lat.min-1) * rate)
		out.Max = int64(float64(c.lat.max) * rate)
	}
	return out
}

// SetReturnQuiet says whether f's return events are put into its rings for a reader
// (false, the default) or only counted and their latencies folded on their P (true:
// Folded), which costs a return no ring, no result registers kept and no reader. It
// takes effect at once, without a patch: a return is either put or folded, never both.
func (f *Func) SetReturnQuiet(quiet bool) { store64(&f.retQuiet, b2u(quiet)) }

// Quiet reports what SetQuiet and SetReturnQuiet last said: whether f's entry events
// are only counted, and whether its returns are only folded. Checkers call it.
func (f *Func) Quiet() (entry, returns bool) {
	return load64(&f.quiet) != 0, load64(&f.retQuiet) != 0
}
