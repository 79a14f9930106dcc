package control_test

import (
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fbtrt"

	"github.com/gosdt/gosdt/sdt/control"
)

// An fbt function as `sdtctl toolexec` instruments it (internal/fbt), its entry probe
// left out: fbtWork's return probe names its arguments latency_ns, panicking, r0.
var fbtWorkReturn = fbtrt.DefineFunc("fbt", "argnames__work__return", "argnames", "argnames.work", "return",
	"latency_ns\npanicking\nr0", "int64\nbool\nint")

//go:noinline
func fbtWork(n int) int {
	c := fbtWorkReturn.NewCall()
	r := n * 3
	c.Done()
	if fbtWorkReturn.Enabled() {
		if x := fbtWorkReturn.Return(c, c.Elapsed()); x != nil {
			fbtrt.Out(x, r)
			x.Returned()
		}
	}
	c.Release()
	return r
}

// The test binary's only fbt probe: where sites cannot be matched (js/wasm) its module
// is the defining package's, not the function's.
const fbtReturns = "fbt:::return"

// TestArgNamesFBT: an aggregation names an fbt return probe's arguments as its
// definition does (sdtctl stat 'fbt:::return' --by probe --hist latency_ns), and a
// name it lacks is refused with the arguments it has.
func TestArgNamesFBT(t *testing.T) {
	needSwitchable(t, fbtReturns)
	agg, err := control.OpenAggregation(fbtReturns, control.AggOptions{By: "probe", Value: "latency_ns", Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	const n = 1000
	for i := range n {
		fbtWork(i)
	}
	snap := agg.Snapshot()
	if len(snap.Rows) != 1 || snap.Rows[0].Count != n || snap.Rows[0].Min < 0 || len(snap.Rows[0].Hist) == 0 ||
		!strings.HasPrefix(snap.Rows[0].Key, "fbt:") || !strings.HasSuffix(snap.Rows[0].Key, ":return") {
		t.Fatalf("rows %+v, want one of %d calls of argnames.work, latencies quantized", snap.Rows, n)
	}
	var hist uint64
	for _, b := range snap.Rows[0].Hist {
		hist += b.Count
	}
	if hist != n {
		t.Errorf("histogram holds %d calls, want %d", hist, n)
	}

	byResult, err := control.OpenAggregation(fbtReturns, control.AggOptions{By: "r0"})
	if err != nil {
		t.Fatal(err)
	}
	defer byResult.Close()
	fbtWork(7)
	if rows := byResult.Snapshot().Rows; len(rows) != 1 || rows[0].Key != "21" {
		t.Errorf("by r0: %+v, want one row keyed 21", rows)
	}

	for _, name := range []string{"latency", "arg3"} {
		_, err := control.OpenAggregation(fbtReturns, control.AggOptions{Value: name})
		if err == nil || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "latency_ns, panicking, r0") {
			t.Errorf("value %s: %v, want an error naming it and the probe's arguments", name, err)
		}
	}
}
