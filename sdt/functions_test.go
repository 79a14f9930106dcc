package sdt_test

import (
	"slices"
	"sort"
	"testing"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/internal/probetest"
)

//go:noinline
func sharedA() { sdt.Probe1(&probetest.Shared, "a") }

//go:noinline
func sharedB() { probetest.Shared.Fire("b") }

func fireShared() {
	sharedA()
	sharedB()
	probetest.FireShared()
}

// TestOneProbeManyFunctions enables one probe definition function by function: each
// function that holds a Probe statement is a logical probe of its own, as in DTrace.
func TestOneProbeManyFunctions(t *testing.T) {
	needSites(t)
	var seen []string
	defer record(probetest.Shared.Attach, &seen)()
	check := func(spec string, want ...string) {
		t.Helper()
		seen = nil
		if _, err := sdt.Enable(spec); err != nil {
			t.Fatalf("Enable(%q): %v", spec, err)
		}
		fireShared()
		if _, err := sdt.Disable(spec); err != nil {
			t.Fatalf("Disable(%q): %v", spec, err)
		}
		sort.Strings(seen)
		if !slices.Equal(seen, want) {
			t.Errorf("%s: fires %q, want %q", spec, seen, want)
		}
	}
	check("probetest::sdt_test.sharedA:shared", "a")
	check("probetest::sdt_test.sharedB:shared", "b")
	check("probetest:*/probetest::shared", "probetest")
	check("probetest:*sdt_test:*:shared", "a", "b")
	check("probetest:::shared", "a", "b", "probetest")

	var fns []string
	for _, pi := range mustList(t, "probetest:::shared") {
		fns = append(fns, pi.Function)
	}
	if want := []string{"probetest.FireShared", "sdt_test.sharedA", "sdt_test.sharedB"}; !slices.Equal(fns, want) {
		t.Errorf("List: functions %q, want %q", fns, want)
	}
}
