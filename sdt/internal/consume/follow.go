package consume

import (
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/alarm"
	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// A command sdtctl starts (sdtctl trace|stat SPEC -- CMD) finds the request sdtctl
// will send in SDT_FOLLOW, hex-encoded (ctlproto's payload of a trace or stat
// request). It is opened here, at the end of sdt's initialisation, before any
// package that fires a probe has run its init: what fires before sdtctl connects is
// held in the trace's buffers, or folded by the aggregation, within the memory budget
// (SDT_MEMORY), and a fire that does not fit is counted dropped, as in any trace. The
// socket is bound at once, not startDelay later. The first request of sdtctl that is
// the same request takes the consumer over (adopt): its stream sends what was
// buffered, then what comes.
//
// The variable is removed from the environment, so that the command's own children
// do not open a trace nobody takes. A consumer nobody takes within followWait is
// closed, and its probes released.
const followEnv = "SDT_FOLLOW"

// followWait is how long a consumer opened at start waits for sdtctl.
const followWait = time.Minute

// attachWait is how long sdt's init waits for sdtctl to take the consumer over
// (WaitAdopted), before the command's own packages run: a short command would
// otherwise end before sdtctl has connected, its events with it (Go has no exit hook
// a library may use). Past it the command runs on, its events buffered.
const attachWait = 10 * time.Second

var follow struct {
	sync.Mutex
	q      *ctlproto.Request // what SDT_FOLLOW asked for
	tr     *Trace
	ag     *Aggregation
	early  bool          // its spec names no function: definitions are taken as they come
	placed bool          // run-time probes were placed for it at start (sdtctl sent their signatures)
	taken  chan struct{} // closed when sdtctl has taken it (or it was closed)
	settle func() error  // the spec matched as any trace's, once the command's packages have defined its probes
	timer  *time.Timer
	// refused is why q's consumer could not be opened (a predicate no probe can
	// take, a bad option): the command waits for sdtctl all the same, which is told
	// it when its request comes (adopt), rather than find a command that ran on
	// untraced and ended before it connected.
	refused error
	// adopted is taken, left open by adopt until the stream that took the consumer
	// has told sdtctl it started (releaseAdopted)
	adopted chan struct{}
}

// releaseAdopted lets sdt's init go on (WaitAdopted), once the stream that took the
// consumer opened at start has sent its start, or ended.
func releaseAdopted() {
	follow.Lock()
	defer follow.Unlock()
	if follow.adopted != nil {
		close(follow.adopted)
		follow.adopted = nil
	}
}

// StartFollow opens the consumer SDT_FOLLOW asks for; true when it did (the caller
// serves at once).
func StartFollow() (opened bool) {
	v, ok := os.LookupEnv(followEnv)
	if !ok {
		return false
	}
	os.Unsetenv(followEnv)
	defer func() {
		if follow.tr == nil && follow.ag == nil {
			registry.Follow("", nil, nil) // nothing opened: sdt's init held every site on for it
		}
	}()
	b, ok := unhex(v)
	if !ok {
		Warnf("%s: not a request sdtctl wrote; nothing traced", followEnv)
		return false
	}
	q, err := ctlproto.DecodeRequest(b)
	if err != nil {
		Warnf("%s: %v; nothing traced", followEnv, err)
		return false
	}
	if len(q.Sigs) > 0 {
		// The signatures sdtctl read from the command's executable: the run-time
		// probes the spec names are placed now (Follow), before sdtctl connects, and
		// take the arguments' names and types from them, as sdtctl's requests give
		// them to probes placed later.
		Signatures(q.Sigs)
	}
	const who = "sdtctl (from the start)"
	var tr *Trace
	var ag *Aggregation
	var settle func() error
	switch q.Op {
	case ctlproto.OpTrace:
		o := traceOptions(q)
		if err := o.check(); err != nil {
			return refuse(q, err)
		}
		s, err := newTraceSink(o)
		if err != nil {
			return refuse(q, err)
		}
		c, st, err := openFollow(who+" trace", q.Spec, s, func(ps []*registry.Probe) error { return s.arm(o.Where, ps) })
		if err != nil {
			s.free()
			return refuse(q, err)
		}
		tr, settle = &Trace{s: s, c: c}, st
	case ctlproto.OpStat:
		a, err := newAggregation(aggOptions(q))
		if err != nil {
			return refuse(q, err)
		}
		c, st, err := openFollow(who+" stat", q.Spec, a, a.resolve)
		if err != nil {
			a.retire()
			return refuse(q, err)
		}
		a.c = c
		ag, settle = &Aggregation{a: a, c: c}, st
	default:
		Warnf("%s: %s: want a trace or a stat", followEnv, q.Op)
		return false
	}
	follow.Lock()
	defer follow.Unlock()
	follow.q, follow.tr, follow.ag, follow.settle = q, tr, ag, settle
	follow.taken = make(chan struct{})
	if sp, err := spec.Parse(q.Spec); err == nil && (sp.Function == "" || sp.Function == "*") {
		follow.early = true
	}
	// Run-time probes the spec names were placed above and fire from the command's
	// first instruction on: the command is held as for a spec that names no function,
	// or one that ends at once would take its events with it before sdtctl connects.
	follow.placed = len(q.Sigs) > 0
	follow.timer = time.AfterFunc(followWait, func() {
		if tr, ag, _ := adopt(nil); tr != nil || ag != nil {
			Warnf("sdtctl did not connect within %v: the trace opened at start is closed", followWait)
			closeFollowed(tr, ag)
		}
	})
	return true
}

// refuse holds the command for sdtctl (WaitAdopted) as for a consumer opened, with
// err to tell it when its request q comes (adopt). It reports true: the caller serves
// at once.
func refuse(q *ctlproto.Request, err error) bool {
	follow.Lock()
	defer follow.Unlock()
	follow.q, follow.refused, follow.taken, follow.early = q, err, make(chan struct{}), true
	follow.timer = time.AfterFunc(followWait, func() { adopt(nil) })
	return true
}

// adopt takes the consumer opened at start for q, the same request, or, with q nil,
// whatever is open; nil, nil when there is none. Taken for q, its spec is matched as
// any trace's (settle): an error there closes it. A request refused at start
// (refuse) is refused again, and the command let go on.
func adopt(q *ctlproto.Request) (*Trace, *Aggregation, error) {
	follow.Lock()
	defer follow.Unlock()
	if err := follow.refused; err != nil && (q == nil || sameRequest(q, follow.q)) {
		follow.refused = nil
		follow.timer.Stop()
		close(follow.taken)
		return nil, nil, err
	}
	if follow.tr == nil && follow.ag == nil {
		return nil, nil, nil
	}
	if q != nil && !sameRequest(q, follow.q) {
		return nil, nil, nil
	}
	tr, ag := follow.tr, follow.ag
	follow.tr, follow.ag = nil, nil
	follow.timer.Stop()
	if q == nil {
		defer close(follow.taken)
	} else {
		// sdt's init goes on once the stream has started (releaseAdopted): sdtctl
		// has the trace's buffers before the command can fire into them
		follow.adopted = follow.taken
	}
	if q != nil {
		// Taken during sdt's init (WaitAdopted), nothing is defined yet: it goes on
		// taking definitions as they come (sdt's follow.go).
		if err := follow.settle(); err != nil && !(errors.Is(err, registry.ErrNoMatch) && (follow.early || follow.placed)) {
			closeFollowed(tr, ag)
			close(follow.adopted)
			follow.adopted = nil
			return nil, nil, err
		}
	}
	return tr, ag, nil
}

// WaitAdopted waits until sdtctl has taken what StartFollow opened, or attachWait.
func WaitAdopted() {
	follow.Lock()
	taken, early, placed := follow.taken, follow.early, follow.placed
	follow.Unlock()
	if taken == nil || !(early || placed) {
		// A spec that names a function of static probes is matched once sites are
		// bound: sdtctl connects after the packages' init, and their fires are
		// counted (hits) only.
		return
	}
	t := alarm.After(attachWait) // not a time.Timer: its channel of time.Time links time's formatting
	defer t.Stop()
	select {
	case <-taken:
	case <-t.C:
		Warnf("sdtctl did not connect within %v: the program runs on, its probes' fires buffered", attachWait)
	}
}

func closeFollowed(tr *Trace, ag *Aggregation) {
	if tr != nil {
		tr.Close()
	}
	if ag != nil {
		ag.Close()
	}
}

// unhex decodes lower- or upper-case hex (not encoding/hex: every traced program
// would link it for this).
func unhex(s string) ([]byte, bool) {
	if len(s)%2 != 0 {
		return nil, false
	}
	b := make([]byte, len(s)/2)
	for i := range b {
		hi, ok1 := nibble(s[2*i])
		lo, ok2 := nibble(s[2*i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		b[i] = hi<<4 | lo
	}
	return b, true
}

func nibble(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// traceOptions are the options of a trace request.
func traceOptions(q *ctlproto.Request) TraceOptions {
	return TraceOptions{BufSize: q.BufSize, Stack: q.Stack, Where: q.Where, shared: true, live: q.Live, upTo: q.BufSizeUpTo}
}

// aggOptions are the options of a stat request.
func aggOptions(q *ctlproto.Request) AggOptions {
	o := AggOptions{By: q.By, Value: q.Value, Hist: q.Hist == ctlproto.HistQuantize, Where: q.Where}
	if q.Hist == ctlproto.HistLinear {
		o.Linear = &Linear{Low: q.LinLow, High: q.LinHigh, Step: q.LinStep}
	}
	return o
}

// openFollow is open for a consumer that takes the command's probes as they are
// defined (registry.Follow); settle holds what its spec matches, as open does.
func openFollow(who, spec string, sink registry.Sink, ready func([]*registry.Probe) error) (*consumer, func() error, error) {
	if err := Started(); err != nil {
		return nil, nil, err
	}
	c := &consumer{o: &registry.Owner{Name: who}, probes: map[uint32]*registry.Probe{}}
	var settled, warned atomic.Bool
	grew := func(ps []*registry.Probe) error {
		if err := ready(ps); err != nil {
			// Before settle, settle tells sdtctl; after it, a definition the options
			// cannot take (a --where naming an argument no probe matched has) would
			// be left out unsaid: the command's stderr says it, once.
			if settled.Load() && !warned.Swap(true) {
				Warnf("%s: %s: not traced", who, strings.TrimPrefix(err.Error(), "control: "))
			}
			return err
		}
		m := make(map[uint32]*registry.Probe, len(ps))
		for _, p := range ps {
			m[p.ID] = p
		}
		c.mu.Lock()
		c.probes, c.names = m, nil
		c.mu.Unlock()
		return nil
	}
	settle, cancel, err := registry.Follow(spec, sink, grew)
	if err != nil {
		return nil, nil, err
	}
	c.cancel = cancel
	consumers.Add(1)
	return c, func() error {
		_, err := settle(c.o)
		settled.Store(true)
		return err
	}, nil
}

// sameRequest reports whether a and b ask for the same trace or stat (not
// ctlproto's encoding, which no traced process needs otherwise).
func sameRequest(a, b *ctlproto.Request) bool {
	return a.Op == b.Op && a.Spec == b.Spec && a.Count == b.Count && a.DurationMS == b.DurationMS &&
		a.BufSize == b.BufSize && a.By == b.By && a.Value == b.Value && a.Hist == b.Hist &&
		a.LinLow == b.LinLow && a.LinHigh == b.LinHigh && a.LinStep == b.LinStep && a.Clear == b.Clear &&
		a.IntervalMS == b.IntervalMS && a.Stack == b.Stack && a.Where == b.Where && a.Live == b.Live &&
		a.BufSizeUpTo == b.BufSizeUpTo
}

// Signatures hands the registry what sdtctl read of functions' signatures, in the
// registry's types.
func Signatures(sigs []ctlproto.FuncSig) {
	out := make([]registry.FuncSig, len(sigs))
	for i, s := range sigs {
		o := registry.FuncSig{Func: s.Func, Spills: make([]arch.Spill, len(s.Spills)),
			Params: sigValues(s.Params), Results: sigValues(s.Results)}
		for j, sp := range s.Spills {
			o.Spills[j] = arch.Spill{Reg: sp.Reg, Size: sp.Size, Off: sp.Off}
		}
		out[i] = o
	}
	registry.Signatures(out)
}

// sigValues converts signatures' values at the server's edge. Not inlined: its two
// callers each carried a copy of its loop.
//
//go:noinline
func sigValues(vs []ctlproto.SigValue) []registry.SigValue {
	out := make([]registry.SigValue, len(vs))
	for i, v := range vs {
		out[i] = registry.SigValue{Name: v.Name, Type: v.Type, Kind: v.Kind, Words: make([]registry.SigWord, len(v.Words))}
		for j, w := range v.Words {
			out[i].Words[j] = registry.SigWord{Float: w.Float, Reg: w.Reg, Size: w.Size}
		}
	}
	return out
}
