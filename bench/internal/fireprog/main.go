// Command fireprog fires one probe per consumer -n times each, for callgrind (see
// bench/fire_callgrind.sh): the instructions of an enabled fire, per consumer, the
// stable figure beside BenchmarkEnabled's nanoseconds.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var (
	pCounter  = sdt.Define1[int]("fireprog", "counter", "v")
	pTrace    = sdt.Define1[int]("fireprog", "trace", "v")
	pCount    = sdt.Define1[int]("fireprog", "count", "v")
	pSum      = sdt.Define1[int]("fireprog", "sum", "v")
	pQuantize = sdt.Define1[int]("fireprog", "quantize", "v")
)

// Each loop fires its own probe: callgrind counts the instructions of each apart.

//go:noinline
func loopCounter(n int) {
	for i := range n {
		sdt.Probe1(&pCounter, i)
	}
}

//go:noinline
func loopTrace(n int) {
	for i := range n {
		sdt.Probe1(&pTrace, i)
	}
}

//go:noinline
func loopCount(n int) {
	for i := range n {
		sdt.Probe1(&pCount, i)
	}
}

//go:noinline
func loopSum(n int) {
	for i := range n {
		sdt.Probe1(&pSum, i)
	}
}

//go:noinline
func loopQuantize(n int) {
	for i := range n {
		sdt.Probe1(&pQuantize, i)
	}
}

func main() {
	n := flag.Int("n", 50_000, "fires per consumer (a trace's buffer holds them all)")
	flag.Parse()
	check := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "fireprog:", err)
			os.Exit(1)
		}
	}
	_, err := sdt.Enable("fireprog:::counter")
	check(err)
	tr, err := control.OpenTrace("fireprog:::trace", control.TraceOptions{})
	check(err)
	aggs := map[string]control.AggOptions{"count": {}, "sum": {Value: "v"}, "quantize": {Value: "v", Hist: true}}
	opened := map[string]*control.Aggregation{}
	for name, o := range aggs {
		a, err := control.OpenAggregation("fireprog:::"+name, o)
		check(err)
		opened[name] = a
	}
	runtime.GC()
	loopCounter(*n)
	loopTrace(*n)
	loopCount(*n)
	loopSum(*n)
	loopQuantize(*n)
	for name, a := range opened {
		if got := a.Snapshot().Rows[0].Count; got != int64(*n) {
			check(fmt.Errorf("%s folded %d of %d fires", name, got, *n))
		}
	}
	if tr.Drops() != 0 {
		check(fmt.Errorf("the trace dropped %d of %d fires", tr.Drops(), *n))
	}
	fmt.Printf("fires=%d\n", *n)
}
