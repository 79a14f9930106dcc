package sdt_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/internal/probetest"
)

// Probes of every arity, fired with values the handlers check.
var (
	ar0 = sdt.Define0("shape", "a0")
	ar1 = sdt.Define1[int]("shape", "a1", "a")
	ar2 = sdt.Define2[int8, string]("shape", "a2", "a", "b")
	ar3 = sdt.Define3[uint16, bool, float64]("shape", "a3", "a", "b", "c")
	ar4 = sdt.Define4[int32, uint32, float32, string]("shape", "a4", "a", "b", "c", "d")
	ar5 = sdt.Define5[int64, uint64, uintptr, uint8, bool]("shape", "a5", "a", "b", "c", "d", "e")
	ar6 = sdt.Define6[int, string, int, string, int, string]("shape", "a6", "a", "b", "c", "d", "e", "f")

	loop    = sdt.Define1[int]("shape", "loop", "i")
	bigLoop = sdt.Define1[int]("shape", "bigloop", "i")
	multi   = sdt.Define1[int]("shape", "multi", "which")
	generic = sdt.Define1[string]("shape", "generic", "type")
	guarded = sdt.Define1[int]("shape", "guarded", "cost")
)

type reason string

//go:noinline
func fireArities(s string) {
	sdt.Probe0(&ar0)
	sdt.Probe1(&ar1, 1)
	sdt.Probe2(&ar2, -2, s)
	sdt.Probe3(&ar3, 3, true, 3.5)
	ar4.Fire(-4, 4, 4.25, s+"!")
	ar5.Fire(-5, 5, 0x55, 0xff, false)
	sdt.Probe6(&ar6, 1, "b", 3, "d", 5, string(reason("f")))
}

//go:noinline
func loopSites(n int) (s int) {
	for i := 0; i < n; i++ {
		sdt.Probe1(&loop, i)
		s += i
	}
	return s
}

// bigLoopSites puts enough code between the loop head and the site that the
// compiler's backward JE (and the sled's JMP) needs a rel32.
//
//go:noinline
func bigLoopSites(xs []int) (s int) {
	for i := range xs {
		x := xs[i]
		s += x*31 ^ (x >> 3) + s<<1
		s ^= x*17 + s>>5 ^ x*x
		s += (x + s) * (x ^ 0x5555) / 7
		s ^= s<<7 + x*x*x ^ s>>11
		s += x*101 ^ s*3 + (s>>2)*x
		s ^= (x+i)*(s+i) ^ i*i*i
		s += s/3 + x%5 ^ i<<3
		sdt.Probe1(&bigLoop, i)
	}
	return s
}

//go:noinline
func multiSites(x int) int {
	sdt.Probe1(&multi, 1)
	if x > 0 {
		sdt.Probe1(&multi, 2)
		x--
	}
	multi.Fire(3)
	return x
}

//go:noinline
func genericSite[T any](v T) string {
	name := fmt.Sprintf("%T", v)
	sdt.Probe1(&generic, name)
	return name
}

//go:noinline
func guardedSite(x int) int {
	if guarded.Enabled() {
		guarded.Fire(x * 3)
	}
	return x
}

//go:noinline
func inlinedStep(n int) { probetest.Step(n); probetest.Step(n + 1) }

// matching says whether this architecture has a site matcher: elsewhere no site is
// found and probes work through their branch check alone.
var matching = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"

func needSites(t *testing.T) {
	t.Helper()
	if !matching {
		t.Skipf("no site matcher for %s: probes work through their branch check", runtime.GOARCH)
	}
}

// patching says whether this platform seals sites; elsewhere every site keeps its
// branch check and the same behaviour is tested through it.
var patching = runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") && os.Getenv("SDT_PATCH") != "off"

func mustList(t *testing.T, spec string) []sdt.ProbeInfo {
	t.Helper()
	infos, err := sdt.List(spec)
	if err != nil {
		t.Fatalf("List(%q): %v", spec, err)
	}
	return infos
}

// sitesIn counts the sealed and branch-only sites per function of the probes spec matches.
func sitesIn(t *testing.T, spec string) map[string][2]int {
	got := map[string][2]int{}
	for _, pi := range mustList(t, spec) {
		for _, s := range pi.Sites {
			c := got[pi.Function]
			if s.State == sdt.BranchOnly {
				c[1]++
				t.Logf("%s: branch-only site %#x: %s", pi, s.Addr, s.Reason)
			} else {
				c[0]++
			}
			got[pi.Function] = c
		}
	}
	return got
}

func TestSitesFound(t *testing.T) {
	needSites(t)
	cases := []struct {
		spec, fn string
		sites    int
	}{
		{"shape:::a0", "sdt_test.fireArities", 1},
		{"shape:::a6", "sdt_test.fireArities", 1},
		{"shape:::loop", "sdt_test.loopSites", 1},
		{"shape:::bigloop", "sdt_test.bigLoopSites", 1},
		{"shape:::multi", "sdt_test.multiSites", 3},
		{"shape:::guarded", "sdt_test.guardedSite", -2}, // 1 or 2: the compiler may merge Enabled with Fire's check
		{"probetest:::op", "sdt_test.inlinedStep", 0},   // the statement is in probetest.Step
		{"probetest:::op", "probetest.Step", 2},         // inlined twice into inlinedStep...
	}
	for _, c := range cases {
		got := sitesIn(t, c.spec)[c.fn]
		total := got[0] + got[1]
		if c.fn == "probetest.Step" {
			// ... and also present out of line in probetest.Step itself.
			if total < c.sites {
				t.Errorf("%s in %s: %d sites, want at least %d", c.spec, c.fn, total, c.sites)
			}
		} else if c.sites < 0 && (total < 1 || total > -c.sites) {
			t.Errorf("%s in %s: %d sites, want 1 to %d", c.spec, c.fn, total, -c.sites)
		} else if c.sites >= 0 && total != c.sites {
			t.Errorf("%s in %s: %d sites, want %d (all: %v)", c.spec, c.fn, total, c.sites, sitesIn(t, c.spec))
		}
		if patching && got[1] != 0 {
			t.Errorf("%s in %s: %d sites not sealed", c.spec, c.fn, got[1])
		}
	}
	// A generic function instantiated twice (two shapes) has a site in each instantiation.
	n := 0
	for fn, c := range sitesIn(t, "shape:::generic") {
		if strings.HasPrefix(fn, "sdt_test.genericSite[") {
			n += c[0] + c[1]
		}
	}
	if n < 2 {
		t.Errorf("genericSite: %d sites, want one per instantiation (2)", n)
	}
}

func sprint(xs ...any) string { return strings.TrimSuffix(fmt.Sprintln(xs...), "\n") }

// record attaches a handler to p that appends what it sees as a string.
func record[T any](attach func(func(T)) func(), seen *[]string) func() {
	return attach(func(v T) { *seen = append(*seen, fmt.Sprint(v)) })
}

func enable(t *testing.T, spec string) {
	t.Helper()
	if _, err := sdt.Enable(spec); err != nil {
		t.Fatalf("Enable(%q): %v", spec, err)
	}
	t.Cleanup(func() {
		if _, err := sdt.Disable(spec); err != nil {
			t.Errorf("Disable(%q): %v", spec, err)
		}
	})
}

func TestArgumentsEveryArity(t *testing.T) {
	var seen []string
	defer ar0.Attach(func() { seen = append(seen, "a0") })()
	defer record(ar1.Attach, &seen)()
	defer ar2.Attach(func(a int8, b string) { seen = append(seen, sprint("a2", a, b)) })()
	defer ar3.Attach(func(a uint16, b bool, c float64) { seen = append(seen, sprint("a3", a, b, c)) })()
	defer ar4.Attach(func(a int32, b uint32, c float32, d string) { seen = append(seen, sprint("a4", a, b, c, d)) })()
	defer ar5.Attach(func(a int64, b uint64, c uintptr, d uint8, e bool) { seen = append(seen, sprint("a5", a, b, c, d, e)) })()
	defer ar6.Attach(func(a int, b string, c int, d string, e int, f string) {
		seen = append(seen, sprint("a6", a, b, c, d, e, f))
	})()

	fireArities("x")
	if len(seen) != 0 {
		t.Fatalf("disabled probes fired: %q", seen)
	}
	enable(t, "shape:::a[0-6]")
	fireArities("x")
	want := []string{"a0", "1", "a2 -2 x", "a3 3 true 3.5", "a4 -4 4 4.25 x!", "a5 -5 5 85 255 false", "a6 1 b 3 d 5 f"}
	if !slices.Equal(seen, want) {
		t.Fatalf("fires:\n got %q\nwant %q", seen, want)
	}
}

func TestLoopsAndMultipleSites(t *testing.T) {
	var seen []string
	defer record(loop.Attach, &seen)()
	defer record(bigLoop.Attach, &seen)()
	defer record(multi.Attach, &seen)()

	loopSites(3)
	bigLoopSites(make([]int, 3))
	multiSites(1)
	if len(seen) != 0 {
		t.Fatalf("disabled probes fired: %q", seen)
	}
	enable(t, "shape:::*loop")
	loopSites(3)
	bigLoopSites(make([]int, 3))
	multiSites(1)
	if want := []string{"0", "1", "2", "0", "1", "2"}; !slices.Equal(seen, want) {
		t.Fatalf("loop fires: got %q, want %q", seen, want)
	}
	seen = nil
	enable(t, "shape:::multi")
	multiSites(1)
	multiSites(0)
	if want := []string{"1", "2", "3", "1", "3"}; !slices.Equal(seen, want) {
		t.Fatalf("multi fires: got %q, want %q", seen, want)
	}
}

func TestEnableOneFunction(t *testing.T) {
	needSites(t)
	var seen []string
	defer record(probetest.Op.Attach, &seen)()
	// The sites inlined into inlinedStep belong to probetest.Step, where the statement is.
	if _, err := sdt.Enable("probetest::sdt_test.inlinedStep:op"); err == nil {
		t.Fatal("a function that inlines the probe statement does not hold it")
	}
	if _, err := sdt.Enable("probetest:*/probetest:probetest.Step:op"); err != nil {
		t.Fatal(err)
	}
	defer sdt.Disable("probetest:::op")
	inlinedStep(7)
	if want := []string{"7", "8"}; !slices.Equal(seen, want) {
		t.Fatalf("got %q, want %q", seen, want)
	}
}

func TestGuardAndGeneric(t *testing.T) {
	var seen []string
	defer record(guarded.Attach, &seen)()
	defer record(generic.Attach, &seen)()
	guardedSite(2)
	genericSite(1)
	genericSite("s")
	if len(seen) != 0 {
		t.Fatalf("disabled probes fired: %q", seen)
	}
	enable(t, "shape:::guarded")
	enable(t, "shape:::generic")
	guardedSite(2)
	genericSite(1)
	genericSite("s")
	if want := []string{"6", "int", "string"}; !slices.Equal(seen, want) {
		t.Fatalf("got %q, want %q", seen, want)
	}
}

func TestListDescribes(t *testing.T) {
	needSites(t)
	infos := mustList(t, "shape::*fireArities:a4")
	if len(infos) != 1 {
		t.Fatalf("List: %d probes, want 1: %v", len(infos), infos)
	}
	pi := infos[0]
	if pi.String() != "shape:github.com/gosdt/gosdt/sdt_test:sdt_test.fireArities:a4" {
		t.Errorf("name %q", pi.String())
	}
	wantArgs := []sdt.ArgInfo{{Name: "a", Type: "int32"}, {Name: "b", Type: "uint32"}, {Name: "c", Type: "float32"}, {Name: "d", Type: "string"}}
	if !slices.Equal(pi.Args, wantArgs) {
		t.Errorf("args %v, want %v", pi.Args, wantArgs)
	}
	s := pi.Sites[0]
	if !strings.HasSuffix(s.File, "shapes_test.go") || s.Line == 0 || s.Addr == 0 {
		t.Errorf("site %+v", s)
	}
	if patching && s.State != sdt.SealedOff {
		t.Errorf("state %v (%s), want sealed-off", s.State, s.Reason)
	}
	before := s.Hits
	enable(t, "shape::*fireArities:a4")
	fireArities("")
	after := mustList(t, "shape::*fireArities:a4")[0]
	if after.Sites[0].Hits != before+1 || !after.Enabled {
		t.Errorf("after one fire: %+v", after)
	}
	if patching && after.Sites[0].State != sdt.SealedOn {
		t.Errorf("state %v, want sealed-on", after.Sites[0].State)
	}
}

func TestSpecErrors(t *testing.T) {
	if _, err := sdt.Enable("nosuch:::probe"); err == nil || !strings.Contains(err.Error(), "matches no probe") {
		t.Errorf("Enable(no match) = %v", err)
	}
	for _, bad := range []string{"", "a:b:c:d:e", "a b", "x:[oops"} {
		if n, err := sdt.Enable(bad); err == nil || n != 0 {
			t.Errorf("Enable(%q) = %d, %v; want an error", bad, n, err)
		}
	}
}

func TestDiscoveryStats(t *testing.T) {
	d := sdt.Discovery()
	t.Logf("%+v", d)
	if matching && (d.Sites == 0 || d.TextBytes == 0 || d.Elapsed <= 0) {
		t.Errorf("discovery found nothing: %+v", d)
	}
	if patching && d.Sealed == 0 {
		t.Errorf("nothing sealed: %+v", d)
	}
	if matching && !d.Table && (d.Search == "" || d.Searched == 0 || d.Searched > d.TextBytes) {
		t.Errorf("discovery does not say what it searched, or how it chose it: %+v", d)
	}
}
