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

// TestCheckOnCatchesRuntime: the checker compares the registry's record of a run-time
// function probe with package fprobe's state of the function, entry and return.
func TestCheckOnCatchesRuntime(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const spec, fn = "fbt:strconv:FormatInt:entry", "strconv.FormatInt"
	if _, err := Enable(spec); err != nil {
		t.Fatal(err)
	}
	defer Disable(spec)
	for _, b := range []struct {
		ret  bool
		want string
	}{{false, "entry probe on=false, but fprobe has its entry on=true"}, {true, "return probe on=true, but fprobe has its returns on=false"}} {
		err, ok := registry.CheckBrokenRuntime(fn, b.ret)
		if !ok {
			t.Fatalf("%s has no run-time probes after Enable(%q)", fn, spec)
		}
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("return=%v: checkOn says %v; want %q", b.ret, err, b.want)
		}
	}
	if err := CheckOn(); err != nil {
		t.Fatalf("restored: %v", err)
	}
}
