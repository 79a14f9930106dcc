package sdt_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var countProbe = sdt.Define1[int]("counttest", "hit", "v")

//go:noinline
func countSiteA(v int) { sdt.Probe1(&countProbe, v) }

//go:noinline
func countSiteB(v int) { sdt.Probe1(&countProbe, v) }

// countIndirect fires through Fire's out-of-line body: a fire not attributed to a
// site, delivered only while the definition is on as a whole.
var countIndirect = countProbe.Fire

// TestCountAggregationReadsHits: an aggregation that counts by probe or by site with
// no predicate is fed no fire (the probe has no consumer while it is open): its rows
// are the sites' hit counters since it opened, by site and unattributed, exact at 1, 2
// and 8 goroutines, by interval, and frozen once closed. A sum by probe still takes
// every fire.
func TestCountAggregationReadsHits(t *testing.T) {
	sdt.NeedSwitchable(t, "counttest:::hit")
	countSiteA(0) // before any aggregation: counted by nobody
	for _, by := range []string{"probe", "site"} {
		t.Run(by, func(t *testing.T) {
			// Fires while another owner holds the probe on, before the aggregation,
			// are not its.
			if _, err := sdt.Enable("counttest:::hit"); err != nil {
				t.Fatal(err)
			}
			countSiteA(1)
			countIndirect(1)
			agg, err := control.OpenAggregation("counttest:::hit", control.AggOptions{By: by})
			if err != nil {
				t.Fatal(err)
			}
			sdt.Disable("counttest:::hit")
			if sdt.Consumed("counttest", "hit") {
				t.Errorf("by %s: the probe's fires are fed to a sink", by)
			}
			total := 0
			for _, g := range []int{1, 2, 8} {
				var wg sync.WaitGroup
				for range g {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range 1000 {
							countSiteA(i)
							if i%4 == 0 {
								countSiteB(i)
							}
						}
					}()
				}
				wg.Wait()
				total += g * 1250
			}
			for range 7 {
				countIndirect(2)
			}
			total += 7
			snap := agg.Interval()
			if got := sum(snap.Rows); got != int64(total) {
				t.Errorf("by %s: %d fires counted, want %d: %+v", by, got, total, snap.Rows)
			}
			if by == "site" && hasSites(t, "counttest:::hit") {
				var unattributed bool
				for _, r := range snap.Rows {
					if strings.HasSuffix(r.Key, "(not attributed to a site)") {
						unattributed = true
						if r.Count != 7 {
							t.Errorf("row %s: %d, want 7", r.Key, r.Count)
						}
					}
				}
				if !unattributed {
					t.Errorf("no row for the unattributed fires: %+v", snap.Rows)
				}
			}
			countSiteB(3)
			countSiteB(3)
			if iv := agg.Interval(); len(iv.Rows) != 1 || iv.Rows[0].Count != 2 {
				t.Errorf("by %s: the second interval: %+v, want one row of 2", by, iv.Rows)
			}
			if got := sum(agg.Snapshot().Rows); got != int64(total+2) {
				t.Errorf("by %s: snapshot %d, want %d", by, got, total+2)
			}
			if err := agg.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := sdt.Enable("counttest:::hit"); err != nil {
				t.Fatal(err)
			}
			countSiteA(4)
			sdt.Disable("counttest:::hit")
			if got := sum(agg.Snapshot().Rows); got != int64(total+2) {
				t.Errorf("by %s: after Close %d, want %d: the fires after it are not its", by, got, total+2)
			}
		})
	}
	agg, err := control.OpenAggregation("counttest:::hit", control.AggOptions{Value: "v"})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	if !sdt.Consumed("counttest", "hit") {
		t.Error("a sum aggregation is not fed the probe's fires")
	}
	countSiteA(5)
	if rows := agg.Snapshot().Rows; len(rows) != 1 || rows[0].Count != 1 || rows[0].Sum != 5 {
		t.Errorf("sum: %+v, want one row of one fire of 5", rows)
	}
}

func sum(rows []control.Row) (n int64) {
	for _, r := range rows {
		n += r.Count
	}
	return n
}

// hasSites reports whether the probes spec names have sites: where no site matcher
// runs (linux/386, js/wasm), every fire is one not attributed to a site, and a
// function field matches nothing.
func hasSites(t testing.TB, spec string) bool {
	t.Helper()
	ps, err := sdt.List(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if len(p.Sites) > 0 {
			return true
		}
	}
	return false
}
