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
)

var sink int

func main() {
	n := flag.Int("n", 1_000_000, "iterations per kernel")
	flag.Parse()
	infos, err := sdt.List("fbt:github.com/gosdt/gosdt/bench/internal/fbtkern::")
	if err != nil && len(infos) > 0 {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sites := 0
	for _, pi := range infos {
		for _, s := range pi.Sites {
			sites++
			if s.State != sdt.SealedOff {
				fmt.Fprintf(os.Stderr, "fbtprog: %s site %#x is %v: %s\n", pi, s.Addr, s.State, s.Reason)
				os.Exit(1)
			}
		}
	}
	fmt.Printf("fbt sites=%d\n", sites)
	sink += fbtkern.LoopWork(*n)
	sink += fbtkern.LoopPair(*n)
	sink += fbtkern.LoopLeaf(*n)
	sink += fbtkern.LoopMid(*n)
	fmt.Printf("iterations=%d\n", *n)
}
