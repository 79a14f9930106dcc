package sdt_test

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var foldProbe = sdt.Define6[int8, float32, uint64, bool, string, uint16]("foldtest", "v", "i8", "f32", "u64", "b", "s", "u16")

//go:noinline
func foldSiteA(i int) {
	sdt.Probe6(&foldProbe, int8(-i), float32(i)+0.5, uint64(1)<<40+uint64(i), i%2 == 0, strings.Repeat("x", i%5), uint16(60000+i))
}

//go:noinline
func foldSiteB(i int) {
	sdt.Probe6(&foldProbe, int8(i), float32(-i), math.MaxUint64, true, "", uint16(i))
}

var foldIndirect = foldProbe.Fire

// TestFoldAggregation: a sum or histogram by probe or by site, with no predicate, is
// fed each fire's value without a firing (registry.Folder); for every kind of argument
// its rows are those of the same aggregation fed every fire's firing (a predicate
// that every fire matches), by site, unattributed fires included, and a spec naming
// one site's function folds only that site.
func TestFoldAggregation(t *testing.T) {
	sdt.NeedSwitchable(t, "foldtest:::v")
	if !hasSites(t, "foldtest:::v") {
		t.Skipf("%s/%s: no probe site found (every fire unattributed): the rows by site this test compares are not there", runtime.GOOS, runtime.GOARCH)
	}
	for _, arg := range []string{"i8", "f32", "u64", "b", "s", "u16", "arg0"} {
		for _, o := range []control.AggOptions{{By: "site", Value: arg}, {By: "probe", Value: arg, Hist: true},
			{By: "site", Value: arg, Linear: &control.Linear{Low: -10, High: 100, Step: 7}}} {
			fold, err := control.OpenAggregation("foldtest:::v", o)
			if err != nil {
				t.Fatal(err)
			}
			o.Where = arg + " == " + arg // every fire: the firing path
			fires, err := control.OpenAggregation("foldtest:::v", o)
			if err != nil {
				t.Fatal(err)
			}
			only, err := control.OpenAggregation("foldtest::foldSiteB:v", control.AggOptions{By: "site", Value: arg})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				foldSiteA(i)
				if i%3 == 0 {
					foldSiteB(i)
				}
			}
			foldIndirect(-3, 1.5, 7, false, "ab", 9)
			want, got := fires.Snapshot(), fold.Snapshot()
			if len(want.Rows) != 3 {
				t.Errorf("%+v: %d rows, want 3 (two sites, unattributed): %+v", o, len(want.Rows), want.Rows)
			}
			if !same(got.Rows, want.Rows) {
				t.Errorf("%+v: folded\n%+v\nwant (as fed every firing)\n%+v", o, got.Rows, want.Rows)
			}
			if rows := only.Snapshot().Rows; len(rows) != 1 || rows[0].Count != 100 || !strings.Contains(rows[0].Key, "foldSiteB") {
				t.Errorf("%+v: foldSiteB's spec folded %+v, want its 100 fires", o, rows)
			}
			fold.Close()
			fires.Close()
			only.Close()
		}
	}
}

func same(a, b []control.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Key != y.Key || x.Count != y.Count || x.Sum != y.Sum || x.Min != y.Min || x.Max != y.Max || x.Avg != y.Avg || len(x.Hist) != len(y.Hist) {
			return false
		}
		for j := range x.Hist {
			if x.Hist[j] != y.Hist[j] {
				return false
			}
		}
	}
	return true
}
