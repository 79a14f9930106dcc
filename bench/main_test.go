package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/gosdt/gosdt/bench/internal/kernels"
	"github.com/gosdt/gosdt/sdt"
)

// gosdtVariant is the name the gosdt kernels are reported under in this process:
// "sealed" when start-up sealed their sites, "branch" when they keep the compiler's
// check (SDT_PATCH=off, or no patching on this platform). The same kernels, at the
// same addresses, are the two variants of the headline comparison; the report
// (bench/cmd/report) runs the benchmark binary once in each state.
var gosdtVariant string

func TestMain(m *testing.M) {
	v, err := siteStates()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	gosdtVariant = v
	os.Exit(m.Run())
}

// siteStates says in which state every site of the gosdt kernels (provider bsdt) is,
// as a variant name, and fails if they are not all in one state or are missing: a
// site that discovery missed would make "sealed" silently measure a branch check.
func siteStates() (string, error) {
	if sdt.Discovery().Reason != "" {
		return "branch", nil // nothing is patched: every site is the compiler's check
	}
	probes, err := sdt.List("bsdt:::")
	if err != nil {
		return "", err
	}
	want := 0
	for _, k := range kernels.Kernels {
		want += k.Sites
	}
	n := 0
	states := map[sdt.SiteState]int{}
	for _, p := range probes {
		for _, s := range p.Sites {
			n++
			states[s.State]++
		}
	}
	if n != want {
		return "", fmt.Errorf("bsdt: %d sites, want %d (one per kernel site)", n, want)
	}
	switch {
	case states[sdt.SealedOff] == n:
		return "sealed", nil
	case states[sdt.BranchOnly] == n:
		return "branch", nil
	}
	return "", fmt.Errorf("bsdt sites are in mixed states %v: the comparison would be wrong", states)
}
