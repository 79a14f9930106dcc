// Command alignedprog calls each of sdt's generated aligned functions (their probe
// sites at every address modulo 8, with rel8 and rel32 jumps; aligned_gen.go, from
// sdt/internal/genaligned) -n times, so that callgrind can count what each site
// retires: bench's TestSiteInstructions. Before any call it checks that every site is
// in the state SDT_PATCH asks (sealed, or its branch check under SDT_PATCH=off) and
// disabled, exiting non-zero if not.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gosdt/gosdt/sdt"
)

func main() {
	n := flag.Int("n", 1000, "calls of each function")
	flag.Parse()
	want := sdt.SealedOff
	if os.Getenv("SDT_PATCH") == "off" {
		want = sdt.BranchOnly
	}
	ps, err := sdt.List("aligned:::")
	if err != nil {
		fmt.Fprintln(os.Stderr, "alignedprog:", err)
		os.Exit(1)
	}
	sites := 0
	for _, p := range ps {
		for _, s := range p.Sites {
			if s.State != want || s.Enabled {
				fmt.Fprintf(os.Stderr, "alignedprog: site %#x of %s is %v (enabled %v), want %v\n", s.Addr, p, s.State, s.Enabled, want)
				os.Exit(1)
			}
			sites++
		}
	}
	if sites < len(alignedFuncs) {
		fmt.Fprintf(os.Stderr, "alignedprog: %d sites, want %d\n", sites, len(alignedFuncs))
		os.Exit(1)
	}
	x := uint64(1)
	for _, f := range alignedFuncs {
		for range *n {
			x = f(0, x)
		}
	}
	fmt.Println("calls", *n, "sites", sites, "x", x)
}
