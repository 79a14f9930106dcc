package control_test

import (
	"fmt"
	"time"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var reqDone = sdt.Define2[string, int]("http", "done", "path", "ms")

//go:noinline
func handle(path string, ms int) { sdt.Probe2(&reqDone, path, ms) }

// An aggregation folds fires in the process, as sdtctl stat does over the socket;
// while open it holds the probe on.
func ExampleOpenAggregation() {
	agg, err := control.OpenAggregation("http:::done", control.AggOptions{By: "arg0", Value: "arg1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := range 6 {
		handle([]string{"/a", "/b", "/a"}[i%3], 10*i)
	}
	agg.Close() // switches the probe off again
	for _, r := range agg.Snapshot().Rows {
		fmt.Println(r.Key, r.Count, r.Sum, r.Min, r.Max)
	}
	// Output:
	// /a 4 100 0 50
	// /b 2 50 10 40
}

// A trace records each fire, with its arguments.
func ExampleOpenTrace() {
	tr, err := control.OpenTrace("http:::done", control.TraceOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	handle("/x", 7)
	evs := make([]control.Event, 8)
	n, _ := tr.Read(evs, time.Second)
	for _, e := range evs[:n] {
		fmt.Println(e.Args[0].Name, e.Args[0].Value, e.Args[1].Name, e.Args[1].Value)
	}
	// Output:
	// path /x ms 7
}
