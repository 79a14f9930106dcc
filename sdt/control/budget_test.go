package control_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

// TestTraceBudget: a trace over its own budget, or over what the others leave of the
// total, is refused before anything is switched or allocated, with the figure asked
// for, the budget and the variable that sets it; closing a trace gives its share
// back; the default buffer size shrinks to fit.
func TestTraceBudget(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	procs := uint64(runtime.GOMAXPROCS(0))
	defer control.SetBudget(procs*256<<10, procs*128<<10)()
	if n := control.BudgetInUse(); n != 0 {
		t.Fatalf("%d bytes of the budget in use before the test", n)
	}
	refused := func(err error, want ...string) {
		t.Helper()
		if !errors.Is(err, control.ErrBudget) {
			t.Fatalf("got %v, want a budget error", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q does not say %q", err, w)
			}
		}
	}

	_, err := control.OpenTrace(spec, control.TraceOptions{BufSize: 256 << 10})
	refused(err, "256 KiB for each of", "SDT_MEMORY_TRACE")
	if n := control.BudgetInUse(); n != 0 || acctProbe.Enabled() {
		t.Fatalf("a refused trace holds %d bytes, its probe on: %v", n, acctProbe.Enabled())
	}
	a, err := control.OpenTrace(spec, control.TraceOptions{BufSize: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := control.OpenTrace(spec, control.TraceOptions{}) // the default, cut to fit
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if control.BufSize(b) != 128<<10 {
		t.Errorf("default buffers within a budget of 128 KiB a P: %d bytes", control.BufSize(b))
	}
	_, err = control.OpenTrace(spec, control.TraceOptions{BufSize: control.MinBufSize})
	refused(err, "left of the", "SDT_MEMORY")
	a.Close()
	c, err := control.OpenTrace(spec, control.TraceOptions{BufSize: control.MinBufSize})
	if err != nil {
		t.Fatalf("once a trace has closed: %v", err)
	}
	defer c.Close()
	b.Close()
	c.Close()
	if n := control.BudgetInUse(); n != 0 {
		t.Fatalf("%d bytes of the budget in use once every trace has closed", n)
	}
}

// TestTraceCloseWhileFiring: traces opened and closed one after another while
// goroutines fire on every P: a buffer is never freed under a fire still writing it
// (where buffers are unmapped, that would be a fault), and the accounting holds
// for each trace.
func TestTraceCloseWhileFiring(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				acctSite(i, "abcdefghijklmnop")
				if i%256 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	for range rounds {
		tr, err := control.OpenTrace(spec, control.TraceOptions{BufSize: control.MinBufSize})
		if err != nil {
			t.Fatal(err)
		}
		tr.Each(time.Millisecond, func(*control.Record) bool { return true })
		tr.Close()
	}
	if n := control.BudgetInUse(); n != 0 {
		t.Fatalf("%d bytes of the budget in use once every trace has closed", n)
	}
}

// TestCloseInsideEach: a trace closed by the function Each calls keeps its buffers
// until Each returns, and gives them back then.
func TestCloseInsideEach(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	firing(t, func(i int) { acctSite(i, "x") })
	tr, err := control.OpenTrace(spec, control.TraceOptions{BufSize: control.MinBufSize})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	n := 0
	for deadline := time.Now().Add(10 * time.Second); n == 0 && time.Now().Before(deadline); {
		tr.Each(100*time.Millisecond, func(r *control.Record) bool {
			if n == 0 {
				tr.Close()
			}
			n++
			_ = r.Int(0) // the record is still readable
			return true
		})
	}
	if n == 0 {
		t.Fatal("no event in 10 s")
	}
	if got := control.BudgetInUse(); got != 0 {
		t.Fatalf("%d bytes of the budget in use after Each returned on a closed trace", got)
	}
	if _, err := tr.Read(make([]control.Event, 1), 0); err != control.ErrClosed {
		t.Fatalf("Read after Close: %v", err)
	}
}

var fitProbe = sdt.Define2[int, int64]("fittest", "kv", "k", "v")

//go:noinline
func fitSite(k int, v int64) { sdt.Probe2(&fitProbe, k, v) }

// TestAggregationBudget: an aggregation keyed by an argument with more values than
// its budget holds folds what fits and counts the rest in its overflow: every fire
// is in a row or in the overflow, and the budget is given back at close.
func TestAggregationBudget(t *testing.T) {
	const spec = "fittest:::kv"
	needSwitchable(t, spec)
	defer control.SetBudget(64<<20, uint64(runtime.GOMAXPROCS(0))*512+200<<10)()
	ag, err := control.OpenAggregation(spec, control.AggOptions{By: "k", Value: "v", Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	const keys = 3000
	for k := range keys {
		fitSite(k, int64(k))
	}
	snap := ag.Snapshot()
	var counted uint64
	for _, r := range snap.Rows {
		counted += uint64(r.Count)
	}
	t.Logf("%d keys: %d rows, %d fires in overflow; %d bytes charged", keys, len(snap.Rows), snap.Overflow, control.BudgetInUse())
	if counted+snap.Overflow != keys || snap.Overflow == 0 || len(snap.Rows) == 0 {
		t.Fatalf("%d fires: %d in %d rows, %d in the overflow", keys, counted, len(snap.Rows), snap.Overflow)
	}
	if n := control.BudgetInUse(); n > uint64(runtime.GOMAXPROCS(0))*512+200<<10 {
		t.Fatalf("the aggregation holds %d bytes, over its budget", n)
	}
	ag.Close()
	if n := control.BudgetInUse(); n != 0 {
		t.Fatalf("%d bytes of the budget in use after Close", n)
	}
}

// TestStatFitsFrame: a stat whose rows do not fit in one frame (4096 keys, each with
// a histogram of 63 buckets) sends those with the most fires and counts the others'
// in the overflow. Before, the frame was refused and the connection closed.
func TestStatFitsFrame(t *testing.T) {
	const spec = "fittest:::kv"
	needSwitchable(t, spec)
	cl := newClient(t)
	cl.send(&ctlproto.Request{Op: ctlproto.OpStat, Spec: spec, By: "k", Value: "v", Hist: ctlproto.HistQuantize})
	cl.expect(ctlproto.KindStarted)
	fired := uint64(0)
	for k := range 4096 {
		for b := range 63 {
			fitSite(k, 1<<b)
			fired++
		}
	}
	cl.send(&ctlproto.Request{Op: ctlproto.OpStop})
	var last *ctlproto.Stat
	for {
		r := cl.read()
		if r.Kind == ctlproto.KindEnd {
			break
		}
		if r.Kind != ctlproto.KindStat {
			t.Fatalf("got %+v", r)
		}
		last = r.Stat
	}
	if last == nil {
		t.Fatal("no stat before the end")
	}
	var counted uint64
	for _, r := range last.Rows {
		counted += uint64(r.Count)
	}
	t.Logf("%d fires: %d rows sent, %d fires in the overflow", fired, len(last.Rows), last.Overflow)
	if counted+last.Overflow != fired || len(last.Rows) == 0 || last.Overflow == 0 {
		t.Fatalf("%d fires: %d in %d rows, %d in the overflow", fired, counted, len(last.Rows), last.Overflow)
	}
}
