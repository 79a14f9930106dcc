package control

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

// Trace receives the fires of the probes a spec matched, as events, from OpenTrace
// until Close. While open it holds those probes on, as its own owner: sdt.Disable
// elsewhere does not switch them off (sdt.List names it among their holders).
type Trace struct {
	c      *consumer
	r      *ring
	mu     sync.Mutex // one reader at a time
	closed atomic.Bool
}

// Event is one fire.
type Event struct {
	Time  time.Time
	Probe string  // provider:module:function:name
	Site  uintptr // the site's address; 0 for a fire not attributed to a site
	Args  []Arg
}

// Arg is one argument of an event.
type Arg struct {
	Name, Type string
	Value      any  // int64, uint64, bool, float64 or string
	Cut        bool // a string cut to StringMax bytes (or fewer, past 192 bytes of an event's strings)
}

// traceRing is the number of records of a trace's buffer (about 2.3 MB): what a
// trace holds between two reads before it drops.
const traceRing = 8192

// ringSink feeds a ring: what a trace subscribes.
type ringSink struct{ r *ring }

func (s ringSink) Fire(probe uint32, site uintptr, a *bridge.Args) {
	s.r.put(nanotime(), site, probe, a)
}

// OpenTrace switches on the probes spec matches (a DTrace probe description, as for
// sdt.Enable) and records their fires until Close. Errors match sdt.ErrNoMatch,
// sdt.ErrMalformedSpec and sdt.ErrNotSupported.
func OpenTrace(spec string) (*Trace, error) { return openTrace("in-process trace", spec) }

func openTrace(who, spec string) (*Trace, error) {
	r := newRing(traceRing)
	c, err := open(who, spec, ringSink{r})
	if err != nil {
		return nil, err
	}
	return &Trace{c: c, r: r}, nil
}

// Read fills evs with the events that have arrived, oldest first, waiting up to wait
// for the first one. It returns how many it filled: 0 when none came in time, and
// ErrClosed once the trace is closed.
func (t *Trace) Read(evs []Event, wait time.Duration) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var rec record
	n := 0
	err := t.poll(wait, func() bool {
		for n < len(evs) && t.r.get(&rec) {
			evs[n] = t.event(&rec)
			n++
		}
		return n > 0
	})
	return n, err
}

// poll calls take until it reports progress, the trace closes, or wait passes,
// sleeping a little longer each time nothing came.
func (t *Trace) poll(wait time.Duration, take func() bool) error {
	deadline := time.Now().Add(wait)
	for idle := 0; ; idle++ {
		if t.closed.Load() {
			return ErrClosed
		}
		if take() || !time.Now().Before(deadline) {
			return nil
		}
		time.Sleep(backoff(idle))
	}
}

// backoff is how long a reader that found nothing sleeps: short at first, so that a
// burst is read promptly, then up to a millisecond.
func backoff(idle int) time.Duration {
	if idle < 100 {
		return 50 * time.Microsecond
	}
	return time.Millisecond
}

func (t *Trace) event(rec *record) Event {
	e := Event{Time: wallTime(rec.time), Probe: t.c.name(rec.probe, rec.site), Site: rec.site}
	p := t.c.probes[rec.probe]
	e.Args = make([]Arg, rec.n)
	for i := range e.Args {
		a := &e.Args[i]
		if p != nil && i < len(p.Args) {
			a.Name, a.Type = p.Args[i], p.Types[i]
		}
		a.Value, a.Cut = rec.value(i), rec.cut&(1<<i) != 0
	}
	return e
}

// Drops is the number of events lost because the trace's buffer was full: fires
// faster than Read takes them.
func (t *Trace) Drops() uint64 { return t.r.drops.Load() }

// Close releases the trace's probes (switching off what no other owner holds) and
// stops recording. Events not read are lost. A fire that began just before Close may
// still be recorded; it is never read.
func (t *Trace) Close() error {
	if !t.closed.Swap(true) {
		t.c.close()
	}
	return nil
}
