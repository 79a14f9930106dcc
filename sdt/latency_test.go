package sdt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

var (
	blockLatency = sdt.DefineLatency1[int]("lat", "block", "status")
	funcLatency  = sdt.DefineLatency("lat", "func")
)

//go:noinline
func timedBlock(d time.Duration, status int) {
	t := blockLatency.Start()
	time.Sleep(d)
	blockLatency.End(t, status)
}

//go:noinline
func timedFunc(d time.Duration) {
	t := funcLatency.Start()
	defer func() { funcLatency.End(t) }()
	time.Sleep(d)
}

// timedFuncShort uses the shortest defer form: it works, but the deferred call
// captures the probe's address, so its End keeps a branch check (no site).
//
//go:noinline
func timedFuncShort(d time.Duration) {
	defer funcLatency.End(funcLatency.Start())
	time.Sleep(d)
}

// TestLatencySites checks that Start and End are sites that discovery seals: Start a
// guard around the clock read, End a fire.
func TestLatencySites(t *testing.T) {
	needSites(t)
	// timedFunc: a guard (Start) and, in its deferred closure, a fire; timedFuncShort:
	// a guard only, its deferred End reads the flag through a pointer.
	for spec, want := range map[string][2]int{"lat::sdt_test.timedBlock:block": {1, 1}, "lat::sdt_test.timedFunc*:func": {1, 2}} {
		infos := mustList(t, spec)
		if len(infos) == 0 {
			t.Fatalf("List(%q): nothing", spec)
		}
		kinds := map[string]int{}
		for _, pi := range infos {
			for _, s := range pi.Sites {
				kinds[s.Kind]++
				if patching && s.State == sdt.BranchOnly {
					t.Errorf("%s: site %#x (%s) is branch-only: %s", pi, s.Addr, s.Kind, s.Reason)
				}
			}
		}
		if kinds["fire"] != want[0] || kinds["guard"] != want[1] {
			t.Errorf("%s: sites by kind %v, want %d fire and %d guard", spec, kinds, want[0], want[1])
		}
	}
}

func TestLatencyValues(t *testing.T) {
	var got []string
	var lat []int64
	defer blockLatency.Attach(func(ns int64, status int) {
		lat = append(lat, ns)
		got = append(got, fmt.Sprint(status))
	})()
	var funcLat []int64
	defer funcLatency.Attach(func(ns int64) { funcLat = append(funcLat, ns) })()

	timedBlock(time.Millisecond, 1) // off: nothing
	timedFunc(time.Millisecond)
	enable(t, "lat:::block")
	enable(t, "lat:::func")
	timedBlock(2*time.Millisecond, 200)
	timedBlock(2*time.Millisecond, 404)
	timedFunc(3 * time.Millisecond)
	timedFuncShort(3 * time.Millisecond)
	if fmt.Sprint(got) != "[200 404]" {
		t.Errorf("statuses %v, want [200 404]", got)
	}
	for _, ns := range lat {
		if ns < int64(2*time.Millisecond) || ns > int64(2*time.Second) {
			t.Errorf("block latency %dns, want >= 2ms", ns)
		}
	}
	if len(funcLat) != 2 || funcLat[0] < int64(3*time.Millisecond) || funcLat[1] < int64(3*time.Millisecond) {
		t.Errorf("defer form latencies %v, want two >= 3ms", funcLat)
	}
}

// A probe switched on between Start and End does not fire for that block: its Start
// read no clock.
func TestLatencyEnabledMidway(t *testing.T) {
	n := 0
	defer blockLatency.Attach(func(int64, int) { n++ })()
	s := blockLatency.Start()
	enable(t, "lat:::block")
	blockLatency.End(s, 0)
	if n != 0 {
		t.Errorf("End after enabling midway fired %d times, want 0", n)
	}
	blockLatency.End(blockLatency.Start(), 0)
	if n != 1 {
		t.Errorf("fired %d times, want 1", n)
	}
}
