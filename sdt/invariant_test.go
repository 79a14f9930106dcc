package sdt

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

var invariantTick = Define1[int]("invarianttest", "tick", "i")

//go:noinline
func invariantSite(i int) { Probe1(&invariantTick, i) }

// TestCheckOnCatches: the invariant checker that every switch in these tests runs
// reports each kind of disagreement, so that its silence after a switch means
// something.
func TestCheckOnCatches(t *testing.T) {
	const spec = "invarianttest:::tick"
	NeedSwitchable(t, spec)
	invariantSite(0)
	if _, err := Enable(spec); err != nil {
		t.Fatal(err)
	}
	defer Disable(spec)
	if err := CheckOn(); err != nil {
		t.Fatalf("after Enable: %v", err)
	}
	breakages := []struct {
		name, want string
		b          registry.Breakage
	}{
		{"a site off while held", "owners, but on=false", registry.SiteOff},
		{"a site on held by nobody", "0 owners, but on=true", registry.SiteNobody},
		{"the flag byte clear while a site is on", "flag byte 0", registry.FlagClear},
	}
	for _, b := range breakages {
		err, ok := registry.CheckBroken("invarianttest", "tick", b.b)
		if !ok {
			if err != nil {
				t.Fatal(err)
			}
			continue // no patchable site here (the branch check only): nothing to break
		}
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: checkOn says %v; want %q", b.name, err, b.want)
		}
	}
	if err := CheckOn(); err != nil {
		t.Fatalf("restored: %v", err)
	}
}

// TestCheckOnCatchesRuntime: the checker holds package fprobe's record of a run-time
// function probe (the one there is) against who holds it, against the registry's own
// facts that follow it (consumers and fprobe's quiet flags, the drain), and against a
// copy the registry must not keep; entry and return. (fprobe's TestStateCatches breaks
// the record against the text and the flags.)
func TestCheckOnCatchesRuntime(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const fn = "strconv.FormatInt"
	for _, spec := range []string{"fbt:strconv:FormatInt:entry", "fbt:strconv:FormatInt:return"} {
		if _, err := Enable(spec); err != nil {
			t.Fatal(err)
		}
		defer Disable(spec)
	}
	if err := CheckOn(); err != nil {
		t.Fatalf("after Enable: %v", err)
	}
	for _, b := range []struct {
		ret  bool
		b    registry.RuntimeBreakage
		want string
	}{
		{false, registry.RuntimeNobody, "FormatInt:entry: 0 owners as a whole, but wide=true"},
		{true, registry.RuntimeNobody, "FormatInt:return: 0 owners as a whole, but wide=true"},
		{false, registry.RuntimeCopy, "FormatInt:entry: wide=true in the registry"},
		{true, registry.RuntimeCopy, "FormatInt:return: wide=true in the registry"},
		{false, registry.RuntimeQuiet, fn + ": entry events quiet=false, but consumed=false"},
		{true, registry.RuntimeQuiet, fn + ": returns quiet=false, but consumed=false"},
		{true, registry.RuntimeNoDrain, "a return probe is on, but no goroutine delivers"},
	} {
		err, ok := registry.CheckBrokenRuntime(fn, b.ret, b.b)
		if !ok {
			t.Fatalf("%s has no run-time probes after Enable", fn)
		}
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("return=%v, breakage %d: checkOn says %v; want %q", b.ret, b.b, err, b.want)
		}
		if err := CheckOn(); err != nil {
			t.Fatalf("restored after breakage %d: %v", b.b, err)
		}
	}
}
