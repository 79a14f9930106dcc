package calls

import (
	"math"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// Sink receives the calls and events of a process, in the order they happened on
// each goroutine: Begin before anything inside the call, End after.
type Sink interface {
	Begin(c *Call)
	End(c *Call)
	// Event is a plain probe's fire: in the innermost call open on its goroutine, nil
	// when none is.
	Event(c *Call, e *Event)
}

// Options of an Assembler.
type Options struct {
	// Window is how long, in the process's time, a record may come after records
	// newer than it; default 1s: a return waits in its ring while the process is
	// not running, and a stream that lags sends one P's records well after
	// another's.
	Window time.Duration
	Idle   time.Duration // how long a stream that has sent nothing is taken to hold the others back no more; default 100ms
	// Settle is how long every stream must have sent nothing before the last
	// Window's records are released too; default 2s.
	Settle     time.Duration
	MaxOpen    int // calls open at once, of all goroutines; default 65536
	MaxPending int // records held at once; past it the oldest are released early; default 262144
}

// Stats counts what an Assembler did.
type Stats struct {
	Events     uint64 // records given
	Calls      uint64 // calls ended (Sink.End), unfinished ones included
	Unpaired   uint64 // of them, returns with no entry open (their entry not traced or lost)
	Unfinished uint64 // of them, calls whose return never came
	Late       uint64 // records that came after their window had passed
	OpenLimit  uint64 // entries not opened: MaxOpen calls were open
	Early      uint64 // records released before their window passed: MaxPending were held
}

// Assembler orders the events of one process and pairs them into calls. It is not
// safe for concurrent use: one goroutine gives it the batches of every stream.
type Assembler struct {
	sink    Sink
	o       Options
	clock   ctlproto.Clock
	timed   bool
	streams []stream
	pending eventHeap
	seq     uint64
	done    uint64 // ticks up to which events were released
	gs      map[uint64][]*Call
	open    int
	last    uint64    // the newest ticks seen
	ran     time.Time // when it last released
	Stats
}

type stream struct {
	newest uint64    // ticks of its newest record
	heard  time.Time // when it last gave records
}

// NewAssembler returns an Assembler that hands sink what it orders.
func NewAssembler(sink Sink, o Options) *Assembler {
	if o.Window <= 0 {
		o.Window = time.Second
	}
	if o.Idle <= 0 {
		o.Idle = 100 * time.Millisecond
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	if o.MaxOpen <= 0 {
		o.MaxOpen = 1 << 16
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 1 << 18
	}
	return &Assembler{sink: sink, o: o, gs: map[uint64][]*Call{}}
}

// Clock is the process's latest clock (of any of its streams).
func (a *Assembler) Clock() *ctlproto.Clock { return &a.clock }

// UnixNano is the wall-clock time of ticks, by the latest clock.
func (a *Assembler) UnixNano(ticks uint64) int64 { return a.clock.UnixNano(ticks) }

// Add gives the assembler a batch of stream's events (in the order the stream sent
// them), the stream's latest clock, and the time it came; it releases what is old
// enough.
func (a *Assembler) Add(streamID int, evs []*Event, clock *ctlproto.Clock, now time.Time) {
	if clock != nil && clock.NsPerTick > 0 {
		a.clock, a.timed = *clock, true
	}
	for len(a.streams) <= streamID {
		a.streams = append(a.streams, stream{})
	}
	s := &a.streams[streamID]
	if len(evs) > 0 {
		s.heard = now
	}
	for _, e := range evs {
		a.Events++
		e.seq, e.stream = a.seq, streamID
		a.seq++
		s.newest = max(s.newest, e.Ticks)
		a.last = max(a.last, e.Ticks)
		if e.Ticks < a.done {
			// Its window has passed: what it belongs with may be gone already.
			a.Late++
			a.handle(e)
			continue
		}
		a.pending.push(e)
	}
	a.release(now)
}

// Flush releases what the streams' silence since the last Add makes old enough.
func (a *Assembler) Flush(now time.Time) { a.release(now) }

// release hands on every pending event older than the watermark: the window behind
// the newest record of the stream that lags most among those still sending. When
// none has sent for Idle, the window behind the newest record of all is still held:
// a process that was not running (a loaded machine), or whose returns wait in its
// rings, sends entries before the returns that came earlier, and silence does not
// say they were all sent. Only Settle of silence releases everything.
func (a *Assembler) release(now time.Time) {
	if !a.timed {
		return
	}
	// Run long after its last run, sdtctl itself was not running: its readers may
	// hold batches not yet given, and the silence is its own.
	woke := !a.ran.IsZero() && now.Sub(a.ran) > a.o.Idle
	a.ran = now
	window := uint64(float64(a.o.Window) / a.clock.NsPerTick)
	behind := func(t uint64) uint64 { return t - min(t, window) }
	mark := uint64(math.MaxUint64)
	var heard time.Time // when any stream last sent
	for i := range a.streams {
		s := &a.streams[i]
		if s.heard.After(heard) {
			heard = s.heard
		}
		if s.heard.IsZero() || now.Sub(s.heard) > a.o.Idle {
			continue // holds the others back no more
		}
		mark = min(mark, behind(s.newest))
	}
	if mark == math.MaxUint64 {
		mark = behind(a.last)
		if !woke && now.Sub(heard) >= a.o.Settle {
			mark = a.last
		}
	}
	for len(a.pending) > 0 && (a.pending[0].Ticks <= mark || len(a.pending) > a.o.MaxPending) {
		if a.pending[0].Ticks > mark {
			a.Early++
		}
		a.next()
	}
}

// Close releases everything pending and ends every call still open, as unfinished,
// at the newest time seen.
func (a *Assembler) Close() {
	for len(a.pending) > 0 {
		a.next()
	}
	for g, stack := range a.gs {
		a.unwind(stack, 0, a.last)
		delete(a.gs, g)
	}
}

// next handles the oldest pending event, and those of the same ticks with it.
//
// Records of the same ticks (a counter that ticks every 16-40 ns, arm64's, is read
// by two fires in one tick) keep the order they came in, in which a return, sent
// from its ring, follows the entries that came after it on its goroutine. So before
// an entry, a return of the same ticks on its goroutine goes first when it closes
// the call open there, and comes before any return of the entry's own function:
// the open call returned, then the entry's function was called (had it been called
// inside, its return would come first).
func (a *Assembler) next() {
	e := a.pending.pop()
	a.done = max(a.done, e.Ticks)
	if e.Probe.Kind != Entry || len(a.pending) == 0 || a.pending[0].Ticks != e.Ticks {
		a.handle(e)
		return
	}
	same := []*Event{e}
	for len(a.pending) > 0 && a.pending[0].Ticks == e.Ticks {
		same = append(same, a.pending.pop())
	}
	for len(same) > 0 {
		i := 0
		if x := same[0]; x.Probe.Kind == Entry {
			if stack := a.gs[x.Goroutine]; len(stack) > 0 {
				top, own := stack[len(stack)-1].probe.Func(), x.Probe.Func()
				for j, y := range same[1:] {
					if y.Goroutine != x.Goroutine || y.Probe.Kind != Return {
						continue
					}
					if f := y.Probe.Func(); f == top && f != own {
						i = j + 1
					}
					if y.Probe.Func() == top || y.Probe.Func() == own {
						break
					}
				}
			}
		}
		a.handle(same[i])
		same = append(same[:i], same[i+1:]...)
	}
}

// Open is the number of calls open now.
func (a *Assembler) Open() int { return a.open }

func (a *Assembler) handle(e *Event) {
	p := e.Probe
	g := e.Goroutine
	stack := a.gs[g]
	var top *Call
	if len(stack) > 0 {
		top = stack[len(stack)-1]
	}
	switch p.Kind {
	case Plain:
		a.sink.Event(top, e)
	case Entry:
		if g == 0 {
			return // nothing to pair its return with: that return is a call of its own
		}
		if a.open >= a.o.MaxOpen {
			a.OpenLimit++
			return
		}
		c := &Call{Goroutine: g, Entry: e, Parent: top, Start: e.Ticks, probe: p}
		a.gs[g] = append(stack, c)
		a.open++
		a.sink.Begin(c)
	case Return:
		fn := p.Func()
		for i := len(stack) - 1; i >= 0 && g != 0; i-- {
			if stack[i].probe.Func() != fn {
				continue
			}
			// The calls above it lost their returns.
			a.unwind(stack, i+1, e.Ticks)
			c := stack[i]
			c.Return, c.End = e, e.Ticks
			stack[i] = nil
			a.open--
			a.Calls++
			if i == 0 {
				delete(a.gs, g)
			} else {
				a.gs[g] = stack[:i]
			}
			a.sink.End(c)
			return
		}
		a.Unpaired++
		a.timedCall(e, top)
	case Timed:
		a.timedCall(e, top)
	}
}

// timedCall is a call known from its end alone: latency_ns before it.
func (a *Assembler) timedCall(e *Event, parent *Call) {
	lat := uint64(float64(e.Latency()) / a.clock.NsPerTick)
	start := e.Ticks - min(lat, e.Ticks)
	if parent != nil && start < parent.Start {
		// It began before the call open on its goroutine did (a block that began
		// outside it, or the clocks' rounding): it is not inside it.
		parent = nil
	}
	c := &Call{Goroutine: e.Goroutine, Return: e, Parent: parent, Start: start, End: e.Ticks, probe: e.Probe}
	a.Calls++
	a.sink.Begin(c)
	a.sink.End(c)
}

// unwind ends stack[from:], innermost first, as unfinished at ticks.
func (a *Assembler) unwind(stack []*Call, from int, ticks uint64) {
	for i := len(stack) - 1; i >= from; i-- {
		c := stack[i]
		c.Unfinished, c.End = true, max(ticks, c.Start)
		stack[i] = nil
		a.open--
		a.Calls++
		a.Unfinished++
		a.sink.End(c)
	}
}

// eventHeap is a min-heap of events by ticks, then arrival.
type eventHeap []*Event

func less(x, y *Event) bool {
	return x.Ticks < y.Ticks || x.Ticks == y.Ticks && x.seq < y.seq
}

func (h *eventHeap) push(e *Event) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() *Event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s[n] = nil
	s = s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && less(s[l], s[m]) {
			m = l
		}
		if r < n && less(s[r], s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
