package control_test

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var aggProbe = sdt.Define2[int, string]("aggtest", "req", "latency", "path")

//go:noinline
func aggSite(latency int, path string) { sdt.Probe2(&aggProbe, latency, path) }

var paths = []string{"/a", "/b", "/c"}

// fireValues fires aggSite with latencies 0..each-1 from each of g goroutines, path
// paths[latency%3].
func fireValues(g, each int) {
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				aggSite(i, paths[i%3])
				if i%512 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
}

// want is the rows fireValues folds by path: for each path, count, sum, min, max.
func want(g, each int) map[string]control.Row {
	rows := map[string]control.Row{}
	for i := range each {
		p := paths[i%3]
		r := rows[p]
		if r.Count == 0 {
			r.Min, r.Max = math.MaxInt64, math.MinInt64
		}
		r.Key = p
		r.Count += int64(g)
		r.Sum += int64(g * i)
		r.Min, r.Max = min(r.Min, int64(i)), max(r.Max, int64(i))
		rows[p] = r
	}
	return rows
}

func check(t *testing.T, snap control.Snapshot, want map[string]control.Row) {
	t.Helper()
	if len(snap.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(snap.Rows), len(want), snap.Rows)
	}
	for _, r := range snap.Rows {
		w := want[r.Key]
		var hist uint64
		for _, b := range r.Hist {
			hist += b.Count
		}
		if r.Count != w.Count || r.Sum != w.Sum || r.Min != w.Min || r.Max != w.Max ||
			r.Avg != float64(w.Sum)/float64(w.Count) || (len(r.Hist) > 0 && hist != uint64(w.Count)) {
			t.Errorf("row %s: %+v, want %+v (histogram holds %d)", r.Key, r, w, hist)
		}
	}
}

// TestAggregationPerP: with 1, 2 and 8 goroutines folding at once, each into its
// P's cells, the merged rows are exact: counts, sums, bounds, histograms. Arguments
// are named as the definition names them.
func TestAggregationPerP(t *testing.T) {
	const spec = "aggtest:::req"
	needSwitchable(t, spec)
	each := 30000
	if testing.Short() {
		each = 3000
	}
	for _, g := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("goroutines=%d", g), func(t *testing.T) {
			agg, err := control.OpenAggregation(spec, control.AggOptions{By: "path", Value: "latency", Hist: true})
			if err != nil {
				t.Fatal(err)
			}
			defer agg.Close()
			fireValues(g, each)
			snap := agg.Snapshot()
			check(t, snap, want(g, each))
			if snap.By != "path" || snap.Value != "latency" || snap.Hist != "quantize" {
				t.Errorf("snapshot of %q by %q, %q", snap.Value, snap.By, snap.Hist)
			}
		})
	}
}

// TestFoldAggregationAlone: a sum or histogram by probe with no predicate, alone on
// its probe, is folded by sdt's fire into the P's cell at hand (registry.FoldTable),
// the folder called only for a cell's first fire: with 1, 2 and 8 goroutines at once
// (and GOMAXPROCS 1, 2, 8), the rows are exact, every bucket included, also while
// Interval reads race with the fires (the intervals add up to the whole); once
// closed, fires fold no more.
func TestFoldAggregationAlone(t *testing.T) {
	const spec = "aggtest:::req"
	needSwitchable(t, spec)
	each := 30000
	if testing.Short() {
		each = 3000
	}
	for _, procs := range []int{1, 2, 8} {
		for _, g := range []int{1, 2, 8} {
			for _, o := range []control.AggOptions{{Value: "latency"}, {Value: "latency", Hist: true},
				{By: "site", Value: "latency", Linear: &control.Linear{Low: 100, High: 20080, Step: 333}}} {
				t.Run(fmt.Sprintf("procs=%d/goroutines=%d/hist=%v/linear=%v", procs, g, o.Hist, o.Linear != nil), func(t *testing.T) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					agg, err := control.OpenAggregation(spec, o)
					if err != nil {
						t.Fatal(err)
					}
					done := make(chan struct{})
					var parts []control.Snapshot
					go func() { // intervals racing with the fires
						defer close(done)
						for range 20 {
							parts = append(parts, agg.Interval())
							runtime.Gosched()
						}
					}()
					fireValues(g, each)
					<-done
					parts = append(parts, agg.Interval())
					all := agg.Snapshot()
					w := control.Row{Count: int64(g * each), Sum: int64(g) * int64(each) * int64(each-1) / 2, Min: 0, Max: int64(each - 1)}
					if len(all.Rows) != 1 {
						t.Fatalf("%d rows, want 1: %+v", len(all.Rows), all.Rows)
					}
					r := all.Rows[0]
					if r.Count != w.Count || r.Sum != w.Sum || r.Min != w.Min || r.Max != w.Max {
						t.Errorf("%+v, want %+v", r, w)
					}
					var count, sum int64
					buckets := map[int64]uint64{}
					for _, p := range parts {
						for _, pr := range p.Rows {
							count += pr.Count
							sum += pr.Sum
							for _, b := range pr.Hist {
								buckets[b.Low] += b.Count
							}
						}
					}
					if count != w.Count || sum != w.Sum {
						t.Errorf("the intervals add up to %d fires, sum %d; want %d, %d", count, sum, w.Count, w.Sum)
					}
					if o.Hist || o.Linear != nil {
						var n uint64
						for _, b := range r.Hist {
							n += b.Count
							if buckets[b.Low] != b.Count {
								t.Errorf("bucket %d: %d in the whole, %d in the intervals", b.Low, b.Count, buckets[b.Low])
							}
						}
						if n != uint64(w.Count) {
							t.Errorf("the histogram holds %d fires, want %d", n, w.Count)
						}
					}
					if o.Linear != nil {
						// 100 values below Low, 100 to 20,079 in buckets of 333, the rest from High on
						want := map[int64]uint64{math.MinInt64: uint64(g * 100)}
						for v := 100; v < each; v++ {
							low := int64(20080)
							if v < 20080 {
								low = int64(100 + (v-100)/333*333)
							}
							want[low] += uint64(g)
						}
						for _, b := range r.Hist {
							if want[b.Low] != b.Count {
								t.Errorf("linear bucket %d: %d, want %d", b.Low, b.Count, want[b.Low])
							}
						}
					}
					agg.Close()
					aggSite(1, "/a")
					if after := agg.Snapshot(); len(after.Rows) != 1 || after.Rows[0].Count != w.Count {
						t.Errorf("a fire after Close was folded: %+v", after.Rows)
					}
				})
			}
		}
	}
}

// TestFoldHandOver: as a probe's folders open and close, the one that folds alone
// changes (its fires fold into a cell found beside the site's hit counter): each
// aggregation's rows are exactly the fires made while it was open, whether it was
// alone or beside another, opened after one closed, or on the probe's only site by
// its function (where sites are found); GOMAXPROCS 1, 2 and 8, with as many
// goroutines.
func TestFoldHandOver(t *testing.T) {
	const spec = "aggtest:::req"
	needSwitchable(t, spec)
	const each = 3000
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			open := func(spec string) *control.Aggregation {
				t.Helper()
				a, err := control.OpenAggregation(spec, control.AggOptions{Value: "latency", Hist: true})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			count := func(a *control.Aggregation, rounds int, what string) {
				t.Helper()
				rows := a.Snapshot().Rows
				w := int64(rounds * procs * each)
				if w == 0 && len(rows) == 0 {
					return
				}
				if len(rows) != 1 || rows[0].Count != w || rows[0].Sum != int64(rounds*procs*each)*int64(each-1)/2 {
					t.Errorf("%s: %+v, want one row of %d fires", what, rows, w)
				}
			}
			a := open(spec)
			fireValues(procs, each)
			b := open(spec) // two folders: neither alone
			fireValues(procs, each)
			a.Close() // b alone, after a's cells were at hand
			fireValues(procs, each)
			count(a, 2, "the first, closed after two rounds")
			count(b, 2, "the second, opened for the last two rounds")
			b.Close()
			bySite := spec
			if ps, err := sdt.List(spec); err == nil && len(ps) == 1 && len(ps[0].Sites) > 0 {
				bySite = "aggtest::aggSite:req" // where sites are found: by the site's function
			}
			c := open(bySite) // alone
			fireValues(procs, each)
			count(c, 1, "the third, by function, after both closed")
			count(b, 2, "the second, closed")
			c.Close()
			d := open(spec)
			fireValues(procs, each)
			d.Close()
			fireValues(procs, each)
			count(d, 1, "the fourth, opened and closed around one round")
			count(c, 1, "the third, closed")
		})
	}
}

// TestAggregationLinear: a linear histogram's buckets, with those below and above.
func TestAggregationLinear(t *testing.T) {
	const spec = "aggtest:::req"
	needSwitchable(t, spec)
	agg, err := control.OpenAggregation(spec, control.AggOptions{Value: "arg0", Linear: &control.Linear{Low: 10, High: 50, Step: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	for _, v := range []int{-5, 9, 10, 19, 20, 49, 50, 1000} {
		aggSite(v, "/")
	}
	snap := agg.Snapshot()
	if len(snap.Rows) != 1 || snap.Hist != "linear" || *snap.Linear != (control.Linear{Low: 10, High: 50, Step: 10}) {
		t.Fatalf("%+v", snap)
	}
	wantHist := []control.Bucket{{Low: math.MinInt64, Count: 2}, {Low: 10, Count: 2}, {Low: 20, Count: 1}, {Low: 40, Count: 1}, {Low: 50, Count: 2}}
	if h := snap.Rows[0].Hist; !slices.Equal(h, wantHist) {
		t.Fatalf("hist %+v, want %+v", h, wantHist)
	}
}

// TestAggregationInterval: each Interval holds what was folded since the one before:
// the intervals' counts and sums add up to the whole, and each has its own bounds.
func TestAggregationInterval(t *testing.T) {
	const spec = "aggtest:::req"
	needSwitchable(t, spec)
	agg, err := control.OpenAggregation(spec, control.AggOptions{By: "probe", Value: "latency", Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	for i := range 100 {
		aggSite(1000+i, "/")
	}
	first := agg.Interval()
	for i := range 10 {
		aggSite(i, "/")
	}
	second := agg.Interval()
	third := agg.Interval()
	if len(first.Rows) != 1 || first.Rows[0].Count != 100 || first.Rows[0].Min != 1000 || first.Rows[0].Max != 1099 {
		t.Fatalf("first interval %+v", first.Rows)
	}
	if len(second.Rows) != 1 || second.Rows[0].Count != 10 || second.Rows[0].Sum != 45 || second.Rows[0].Min != 0 ||
		second.Rows[0].Max != 9 || second.Rows[0].Hist[len(second.Rows[0].Hist)-1].Low != 8 {
		t.Fatalf("second interval %+v", second.Rows)
	}
	if len(third.Rows) != 0 {
		t.Fatalf("an interval with no fire has rows: %+v", third.Rows)
	}
	all := agg.Snapshot()
	if r := all.Rows[0]; r.Count != 110 || r.Min != 0 || r.Max != 1099 {
		t.Fatalf("all %+v", r)
	}
}
