package calls

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// A clock of one tick a nanosecond.
var clock = &ctlproto.Clock{Ticks: 0, Wall: 1e18, NsPerTick: 1}

var (
	entryF  = NewProbe(&ctlproto.Desc{Probe: "fbt:ex:ex.F:entry", Args: []ctlproto.Arg{{Name: "n", Type: "int"}}, Kinds: []byte{ctlproto.ValInt}})
	returnF = NewProbe(&ctlproto.Desc{Probe: "fbt:ex:ex.F:return", Args: []ctlproto.Arg{{Name: "latency_ns"}, {Name: "panicking"}, {Name: "r0", Type: "error"}},
		Kinds: []byte{ctlproto.ValInt, ctlproto.ValBool, ctlproto.ValString}})
	entryG  = NewProbe(&ctlproto.Desc{Probe: "fbt:ex:ex.G:entry"})
	returnG = NewProbe(&ctlproto.Desc{Probe: "fbt:ex:ex.G:return", Args: []ctlproto.Arg{{Name: "latency_ns"}, {Name: "panicking"}}, Kinds: []byte{ctlproto.ValInt, ctlproto.ValBool}})
	hit     = NewProbe(&ctlproto.Desc{Probe: "cache:ex:ex.G:hit", Args: []ctlproto.Arg{{Name: "key"}}, Kinds: []byte{ctlproto.ValString}})
	lat     = NewProbe(&ctlproto.Desc{Probe: "http:ex:ex.serve:request", Args: []ctlproto.Arg{{Name: "latency_ns"}, {Name: "status"}}, Kinds: []byte{ctlproto.ValInt, ctlproto.ValInt}})
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		p    *Probe
		want Kind
	}{{entryF, Entry}, {returnF, Return}, {hit, Plain}, {lat, Timed}} {
		if tc.p.Kind != tc.want {
			t.Errorf("%s: %v, want %v", tc.p.Name, tc.p.Kind, tc.want)
		}
	}
	if returnF.Results != 2 || returnF.Panicking != 1 || lat.Results != 1 || entryF.Func() != returnF.Func() {
		t.Errorf("return F: results at %d, panicking %d; latency: results at %d", returnF.Results, returnF.Panicking, lat.Results)
	}
}

// record packs a record as a process's buffer holds it.
func record(p *Probe, ticks, g uint64, args ...any) ctlproto.Record {
	var strs []byte
	slots := make([]uint64, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case int:
			slots[i] = uint64(v)
		case bool:
			if v {
				slots[i] = 1
			}
		case string:
			slots[i] = uint64(len(v))
			strs = append(strs, v...)
		}
	}
	n := ctlproto.RecordHead + 8*len(args) + (len(strs)+7)&^7
	b := make([]byte, n)
	binary.LittleEndian.PutUint16(b, uint16(n))
	b[2] = byte(len(args))
	binary.LittleEndian.PutUint64(b[16:], ticks)
	binary.LittleEndian.PutUint64(b[24:], g)
	for i, s := range slots {
		binary.LittleEndian.PutUint64(b[32+8*i:], s)
	}
	copy(b[32+8*len(args):], strs)
	return b
}

// log is a Sink that writes down what it is given.
type log struct{ lines []string }

func name(c *Call) string {
	if c == nil {
		return "-"
	}
	return strings.TrimPrefix(c.Probe().Function, "ex.")
}

func (l *log) Begin(c *Call) {
	l.lines = append(l.lines, fmt.Sprintf("begin %s@%d g%d in %s", name(c), c.Start, c.Goroutine, name(c.Parent)))
}

func (l *log) End(c *Call) {
	s := fmt.Sprintf("end %s@%d", name(c), c.End)
	if c.Unfinished {
		s += " unfinished"
	}
	l.lines = append(l.lines, s)
}

func (l *log) Event(c *Call, e *Event) {
	l.lines = append(l.lines, fmt.Sprintf("event %s=%s in %s", e.Probe.Probe, e.Arg(0).Str, name(c)))
}

func (l *log) String() string { return strings.Join(l.lines, "\n") }

func ev(p *Probe, ticks, g uint64, args ...any) *Event {
	return NewEvent(p, record(p, ticks, g, args...), 0)
}

// TestOrder: the events of two goroutines, shuffled across three streams (as Ps and
// streams deliver them), come out in the order they fired, paired and nested.
func TestOrder(t *testing.T) {
	fire := func() []*Event {
		return []*Event{
			ev(entryF, 10, 1, 5), ev(entryF, 12, 2, 6),
			ev(entryG, 20, 1), ev(hit, 25, 1, "k"), ev(returnG, 30, 1, 10, false),
			ev(hit, 35, 2, "j"),
			ev(returnF, 40, 1, 30, false, "<nil>"), ev(returnF, 50, 2, 38, false, "<nil>"),
		}
	}
	var want log
	{
		a := NewAssembler(&want, Options{})
		a.Add(0, fire(), clock, time.Unix(0, 0))
		a.Close()
	}
	if got := want.String(); got != strings.Join([]string{
		"begin F@10 g1 in -", "begin F@12 g2 in -", "begin G@20 g1 in F", "event hit=k in G", "end G@30",
		"event hit=j in F", "end F@40", "end F@50"}, "\n") {
		t.Fatalf("in order:\n%s", got)
	}
	for i := range 20 {
		evs := fire()
		rand.New(rand.NewPCG(uint64(i), 1)).Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		var got log
		a := NewAssembler(&got, Options{})
		now := time.Unix(0, 0)
		for j, e := range evs {
			a.Add(j%3, []*Event{e}, clock, now)
		}
		a.Close()
		if got.String() != want.String() || a.Late != 0 {
			t.Fatalf("shuffled (%d late):\n%s\nwant\n%s", a.Late, got.String(), want.String())
		}
	}
}

// TestLostReturn: a return that closes a call inside which another is open ends that
// one unfinished; a return with no entry open is a call of its latency; an event
// outside any call is in none; Close ends what is open.
func TestLostReturn(t *testing.T) {
	var l log
	a := NewAssembler(&l, Options{})
	a.Add(0, []*Event{
		ev(entryF, 100, 1, 1), ev(entryG, 110, 1), ev(returnF, 150, 1, 50, false, "<nil>"),
		ev(returnG, 300, 1, 40, false), ev(hit, 310, 1, "x"),
		ev(entryF, 400, 1, 2), ev(lat, 450, 1, 30, 200),
	}, clock, time.Unix(0, 0))
	a.Close()
	want := strings.Join([]string{"begin F@100 g1 in -", "begin G@110 g1 in F", "end G@150 unfinished", "end F@150",
		"begin G@260 g1 in -", "end G@300", "event hit=x in -", "begin F@400 g1 in -", "begin serve@420 g1 in F", "end serve@450",
		"end F@450 unfinished"}, "\n")
	if l.String() != want {
		t.Errorf("got\n%s\nwant\n%s", l.String(), want)
	}
	if a.Unpaired != 1 || a.Unfinished != 2 || a.Calls != 5 || a.Open() != 0 {
		t.Errorf("stats %+v, open %d", a.Stats, a.Open())
	}
}

// TestWindow: events are held until the window behind the newest of every stream
// still sending has passed, or that stream has been silent; one that comes after its
// window is used and counted late.
func TestWindow(t *testing.T) {
	var l log
	a := NewAssembler(&l, Options{Window: 100 * time.Nanosecond, Idle: time.Second})
	t0 := time.Unix(0, 0)
	a.Add(0, []*Event{ev(hit, 10, 1, "a")}, clock, t0)
	a.Add(1, []*Event{ev(hit, 150, 1, "b")}, clock, t0)
	if len(l.lines) != 0 {
		t.Fatalf("released before the window passed: %v", l.lines)
	}
	a.Add(0, []*Event{ev(hit, 300, 1, "c")}, clock, t0)
	// stream 1 lags: its newest (150) less the window holds everything after 50
	if l.String() != "event hit=a in -" {
		t.Fatalf("after stream 0 moved on: %v", l.lines)
	}
	// Both silent, but sdtctl itself did not run for 2 s: its readers may hold
	// batches, and only what is a window older than the newest goes.
	a.Flush(t0.Add(2 * time.Second))
	if len(l.lines) != 2 {
		t.Fatalf("after sdtctl ran again: %v", l.lines)
	}
	a.Flush(t0.Add(2*time.Second + 25*time.Millisecond)) // both silent: everything goes
	if len(l.lines) != 3 {
		t.Fatalf("after both fell silent: %v", l.lines)
	}
	a.Add(1, []*Event{ev(hit, 200, 1, "late")}, clock, t0.Add(2*time.Second))
	if a.Late != 1 || len(l.lines) != 4 {
		t.Errorf("a record older than what was released: late %d, %v", a.Late, l.lines)
	}
}

// TestSilenceHoldsWindow: a process that sends nothing for a while (it was not
// running, or its returns wait in its rings) has not necessarily sent everything:
// the entries it sent are held a window behind the newest until every stream has
// been silent for Settle, so that returns that fired before them, sent after the
// silence, still come first. F calls G twice; the first G's return comes after
// the second G's entry.
func TestSilenceHoldsWindow(t *testing.T) {
	var l log
	a := NewAssembler(&l, Options{Window: 100 * time.Nanosecond, Idle: 100 * time.Millisecond, Settle: time.Second})
	t0 := time.Unix(0, 0)
	a.Add(0, []*Event{ev(entryF, 10, 1, 1), ev(entryG, 20, 1), ev(entryG, 40, 1)}, clock, t0)
	for d := 25 * time.Millisecond; d < 500*time.Millisecond; d += 25 * time.Millisecond {
		a.Flush(t0.Add(d))
	}
	if len(l.lines) != 0 {
		t.Fatalf("released within the window of a stream silent for less than Settle: %v", l.lines)
	}
	a.Add(0, []*Event{ev(returnG, 30, 1, 10, false), ev(returnG, 50, 1, 10, false), ev(returnF, 60, 1, 50, false, "<nil>")}, clock, t0.Add(500*time.Millisecond))
	a.Close()
	want := strings.Join([]string{"begin F@10 g1 in -", "begin G@20 g1 in F", "end G@30", "begin G@40 g1 in F", "end G@50", "end F@60"}, "\n")
	if l.String() != want || a.Late+a.Unfinished+a.Unpaired != 0 {
		t.Fatalf("got (%+v)\n%s\nwant\n%s", a.Stats, l.String(), want)
	}

	// Settle of silence releases everything.
	l = log{}
	a = NewAssembler(&l, Options{Window: 100 * time.Nanosecond, Idle: 100 * time.Millisecond, Settle: time.Second})
	a.Add(0, []*Event{ev(entryF, 10, 1, 1), ev(returnF, 20, 1, 10, false, "<nil>")}, clock, t0)
	for d := 25 * time.Millisecond; d < time.Second; d += 25 * time.Millisecond {
		a.Flush(t0.Add(d))
	}
	if len(l.lines) != 0 {
		t.Fatalf("released before Settle: %v", l.lines)
	}
	a.Flush(t0.Add(time.Second))
	if l.String() != "begin F@10 g1 in -\nend F@20" {
		t.Fatalf("after Settle: %v", l.lines)
	}
}

// TestMaxPending: past MaxPending records held, the oldest are released before their
// window has passed, counted.
func TestMaxPending(t *testing.T) {
	var l log
	a := NewAssembler(&l, Options{Window: time.Second, MaxPending: 2})
	a.Add(0, []*Event{ev(hit, 10, 1, "a"), ev(hit, 20, 1, "b"), ev(hit, 30, 1, "c")}, clock, time.Unix(0, 0))
	if l.String() != "event hit=a in -" || a.Early != 1 {
		t.Fatalf("early %d: %v", a.Early, l.lines)
	}
	a.Close()
	if len(l.lines) != 3 || a.Early != 1 || a.Late != 0 {
		t.Fatalf("%+v: %v", a.Stats, l.lines)
	}
}

// TestOpenLimit: past MaxOpen open calls an entry opens none; its return is then a
// call of its latency.
func TestOpenLimit(t *testing.T) {
	var l log
	a := NewAssembler(&l, Options{MaxOpen: 1})
	a.Add(0, []*Event{ev(entryF, 10, 1, 1), ev(entryG, 20, 1), ev(returnG, 30, 1, 5, false), ev(returnF, 40, 1, 30, false, "<nil>")}, clock, time.Unix(0, 0))
	a.Close()
	if a.OpenLimit != 1 || a.Unpaired != 1 || l.lines[1] != "begin G@25 g1 in F" {
		t.Errorf("stats %+v:\n%s", a.Stats, l.String())
	}
}

// TestSameTicks: a counter that ticks every few tens of ns stamps a return and the
// next entry on its goroutine alike, and the return, sent from its ring, comes after
// the entry: F calls G, then H in the tick G returned; and, in another tick, H is
// called inside G and both return in it.
func TestSameTicks(t *testing.T) {
	entryH := NewProbe(&ctlproto.Desc{Probe: "fbt:ex:ex.H:entry"})
	returnH := NewProbe(&ctlproto.Desc{Probe: "fbt:ex:ex.H:return", Args: []ctlproto.Arg{{Name: "latency_ns"}}, Kinds: []byte{ctlproto.ValInt}})
	for _, c := range []struct {
		entries, returns []*Event
		want             []string
	}{
		{
			[]*Event{ev(entryF, 10, 1, 1), ev(entryG, 20, 1), ev(entryH, 30, 1)},
			[]*Event{ev(returnG, 30, 1, 10, false), ev(returnH, 40, 1, 10), ev(returnF, 50, 1, 40, false, "<nil>")},
			[]string{"begin F@10 g1 in -", "begin G@20 g1 in F", "end G@30", "begin H@30 g1 in F", "end H@40", "end F@50"},
		},
		{
			[]*Event{ev(entryF, 10, 1, 1), ev(entryG, 20, 1), ev(entryH, 30, 1)},
			[]*Event{ev(returnH, 30, 1, 0), ev(returnG, 30, 1, 10, false), ev(returnF, 50, 1, 40, false, "<nil>")},
			[]string{"begin F@10 g1 in -", "begin G@20 g1 in F", "begin H@30 g1 in G", "end H@30", "end G@30", "end F@50"},
		},
	} {
		var l log
		a := NewAssembler(&l, Options{})
		a.Add(0, c.entries, clock, time.Unix(0, 0))
		a.Add(1, c.returns, clock, time.Unix(0, 0))
		a.Close()
		if want := strings.Join(c.want, "\n"); l.String() != want || a.Unfinished+a.Unpaired != 0 {
			t.Errorf("got (%+v)\n%s\nwant\n%s", a.Stats, l.String(), want)
		}
	}
}
