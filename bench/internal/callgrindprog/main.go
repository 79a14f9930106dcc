// Command callgrindprog runs every disabled variant of the chain, wide and many
// shapes for -n iterations, each in its own function (<shape>_<variant>), so that
// callgrind can count the instructions each retires; see bench/callgrind.sh. Before
// any kernel runs it unseals the branch variant's probes and checks every site's
// state, exiting non-zero if the comparison would be wrong.
package main

import (
	"flag"
	"fmt"
	"github.com/gosdt/gosdt/internal/hooks"
	"os"

	"github.com/gosdt/gosdt/sdt"
)

func main() {
	n := flag.Int("n", 1_000_000, "iterations per kernel")
	flag.Parse()
	if err := check(); err != nil {
		fmt.Fprintln(os.Stderr, "callgrindprog:", err)
		os.Exit(1)
	}
	for _, k := range kernels {
		if k.shape == "cold" { // the same instructions as chain
			continue
		}
		for _, v := range k.variants {
			iters := *n
			if k.shape == "many" {
				iters = max(1, *n/k.sites)
			}
			v.fn(iters)
			fmt.Printf("%s_%s iterations=%d sites=%d\n", k.shape, v.name, iters, k.sites)
		}
	}
}

// check unseals the branch variant and verifies both gosdt variants' site states.
func check() error {
	if d := sdt.Discovery(); d.Reason != "" {
		return fmt.Errorf("no discovery on this platform: %s", d.Reason)
	}
	if _, err := hooks.Unseal("bbranch:::"); err != nil {
		return err
	}
	for provider, want := range map[string]sdt.SiteState{"bsealed": sdt.SealedOff, "bbranch": sdt.BranchOnly} {
		probes, err := sdt.List(provider + ":::")
		if err != nil {
			return err
		}
		n := 0
		for _, p := range probes {
			for _, s := range p.Sites {
				n++
				if s.State != want {
					return fmt.Errorf("%s: site %#x is %v (%s), want %v", p, s.Addr, s.State, s.Reason, want)
				}
			}
		}
		if n == 0 {
			return fmt.Errorf("%s: no site found", provider)
		}
	}
	return nil
}
