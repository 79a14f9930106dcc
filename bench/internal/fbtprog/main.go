// Command fbtprog runs the fbt kernels for -n iterations each, for callgrind (see
// bench/fbt_callgrind.sh, which builds it with and without bench/fbt.rules). It
// prints whether the kernels are instrumented, and exits non-zero if an fbt site of
// theirs is not sealed.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gosdt/gosdt/bench/internal/fbtkern"
	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var sink int

func main() {
	n := flag.Int("n", 1_000_000, "iterations per kernel")
	agg := flag.Bool("agg", false, "count Work's entry and return fires in an aggregation by probe (what sdtctl stat attaches), and run only LoopWork: the enabled cost")
	flag.Parse()
	infos, err := sdt.List("fbt:github.com/gosdt/gosdt/bench/internal/fbtkern::")
	if err != nil && len(infos) > 0 {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sites := 0
	for _, pi := range infos {
		if pi.Kind == "runtime" {
			continue // what rules did not instrument
		}
		for _, s := range pi.Sites {
			sites++
			if s.State != sdt.SealedOff {
				fmt.Fprintf(os.Stderr, "fbtprog: %s site %#x is %v: %s\n", pi, s.Addr, s.State, s.Reason)
				os.Exit(1)
			}
		}
	}
	fmt.Printf("fbt sites=%d\n", sites)
	if *agg {
		a, err := control.OpenAggregation("fbt:github.com/gosdt/gosdt/bench/internal/fbtkern:fbtkern.Work:", control.AggOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "fbtprog:", err)
			os.Exit(1)
		}
		defer func() {
			for _, r := range a.Snapshot().Rows {
				fmt.Printf("%s %d\n", r.Key, r.Count)
			}
		}()
	}
	sink += fbtkern.LoopWork(*n)
	if *agg {
		return // the enabled cost is Work's alone
	}
	sink += fbtkern.LoopPair(*n)
	sink += fbtkern.LoopLeaf(*n)
	sink += fbtkern.LoopMid(*n)
	fmt.Printf("iterations=%d\n", *n)
}
