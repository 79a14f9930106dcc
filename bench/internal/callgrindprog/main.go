// Command callgrindprog runs every disabled variant of the chain, wide and many
// shapes for -n iterations, each in its own function (<shape>_<variant>), so that
// callgrind can count the instructions each retires; see bench/callgrind.sh. Before
// any kernel runs it checks that the gosdt kernels' sites are all sealed, or all
// branch checks (SDT_PATCH=off), exiting non-zero if not. callgrind.sh runs it in
// both states: the same function at the same address.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gosdt/gosdt/bench/internal/kernels"
	"github.com/gosdt/gosdt/sdt"
)

func main() {
	n := flag.Int("n", 1_000_000, "iterations per kernel")
	flag.Parse()
	state, err := check()
	if err != nil {
		fmt.Fprintln(os.Stderr, "callgrindprog:", err)
		os.Exit(1)
	}
	for _, k := range kernels.Kernels {
		if k.Shape == "cold" { // the same instructions as chain, plus the flush
			continue
		}
		for _, v := range k.Variants {
			iters := *n
			if k.Shape == "many" {
				iters = max(1, *n/k.Sites)
			}
			v.Fn(iters)
			// fn names the function callgrind counts; variant is what it measured.
			name := v.Name
			if name == "gosdt" {
				name = state
			}
			fmt.Printf("%s_%s iterations=%d sites=%d fn=%s_%s\n", k.Shape, name, iters, k.Sites, k.Shape, v.Name)
		}
	}
}

// check says in which state the gosdt kernels' sites all are ("sealed", or
// "branch" under SDT_PATCH=off) and fails if they are missing or mixed.
func check() (string, error) {
	if d := sdt.Discovery(); d.Reason != "" {
		return "", fmt.Errorf("no discovery on this platform: %s", d.Reason)
	}
	probes, err := sdt.List("bsdt:::")
	if err != nil {
		return "", err
	}
	n := 0
	states := map[sdt.SiteState]int{}
	for _, p := range probes {
		for _, s := range p.Sites {
			n++
			states[s.State]++
		}
	}
	switch {
	case n == 0:
		return "", fmt.Errorf("bsdt: no site found")
	case states[sdt.SealedOff] == n:
		return "sealed", nil
	case states[sdt.BranchOnly] == n:
		return "branch", nil
	}
	return "", fmt.Errorf("bsdt sites are in mixed states %v", states)
}
