package control_test

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var (
	consProbe = sdt.Define2[int, string]("constest", "fire", "n", "s")
	consKind  = sdt.Define4[uint8, float64, bool, named]("constest", "kinds", "u", "f", "b", "n")
)

type named int16

//go:noinline
func consSite(n int, s string) { sdt.Probe2(&consProbe, n, s) }

//go:noinline
func kindSite(u uint8, f float64, b bool, n named) { sdt.Probe4(&consKind, u, f, b, n) }

// needSwitchable skips a test whose probes nothing can switch on this platform
// (js/wasm: no site is verified and no definition can be located).
func needSwitchable(t testing.TB, spec string) {
	t.Helper()
	_, err := sdt.Enable(spec)
	if errors.Is(err, sdt.ErrNotSupported) {
		t.Skipf("%s/%s: %v", runtime.GOOS, runtime.GOARCH, err)
	}
	if err == nil {
		sdt.Disable(spec)
	}
}

// readN reads n events from tr, failing the test after 10 s.
func readN(t *testing.T, tr *control.Trace, n int) []control.Event {
	t.Helper()
	evs := make([]control.Event, n)
	got := 0
	for deadline := time.Now().Add(10 * time.Second); got < n; {
		k, err := tr.Read(evs[got:], 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got += k
		if time.Now().After(deadline) {
			t.Fatalf("%d events of %d in 10 s", got, n)
		}
	}
	return evs
}

func holders(t *testing.T, spec string) []string {
	t.Helper()
	list, err := sdt.List(spec)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, pi := range list {
		for _, h := range pi.HeldBy {
			if !slices.Contains(all, h) {
				all = append(all, h)
			}
		}
	}
	slices.Sort(all)
	return all
}

// TestTraceAndAggregate: a trace receives its probe's fires with their arguments and
// names; an aggregation folds them; both hold the probe on while open and release it
// when closed.
func TestTraceAndAggregate(t *testing.T) {
	const spec = "constest:::fire"
	needSwitchable(t, spec)
	if _, err := control.OpenTrace("nosuch:::probe", control.TraceOptions{}); !errors.Is(err, sdt.ErrNoMatch) {
		t.Fatalf("OpenTrace nosuch: %v", err)
	}
	if _, err := control.OpenTrace("a:b:c:d:e", control.TraceOptions{}); !errors.Is(err, sdt.ErrMalformedSpec) {
		t.Fatalf("OpenTrace with a malformed spec: %v", err)
	}
	consSite(-1, "before") // off: not traced
	tr, err := control.OpenTrace(spec, control.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	agg, err := control.OpenAggregation(spec, control.AggOptions{By: "arg1", Value: "arg0", Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	if !consProbe.Enabled() {
		t.Fatal("an open trace does not hold its probe on")
	}
	if got := holders(t, spec); !slices.Equal(got, []string{"in-process aggregation", "in-process trace"}) {
		t.Fatalf("holders %q", got)
	}
	// The program's own Enable and Disable do not touch the consumers' holds.
	if _, err := sdt.Enable(spec); err != nil {
		t.Fatal(err)
	}
	if _, err := sdt.Disable(spec); !errors.Is(err, sdt.ErrStillHeld) || !consProbe.Enabled() {
		t.Fatalf("Disable while a trace holds the probe: %v (enabled %v)", err, consProbe.Enabled())
	}
	for i := range 10 {
		consSite(i, []string{"even", "odd"}[i%2])
	}
	// Without a site matcher (386, ...) fires are not attributed: site 0, no function.
	attributed := runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"
	for i, e := range readN(t, tr, 10) {
		want := []control.Arg{{Name: "n", Type: "int", Value: int64(i)}, {Name: "s", Type: "string", Value: []string{"even", "odd"}[i%2]}}
		if !slices.Equal(e.Args, want) {
			t.Fatalf("event %d: %+v", i, e)
		}
		name := "constest:github.com/gosdt/gosdt/sdt/control_test:control_test.consSite:fire"
		if !attributed {
			name = "constest:github.com/gosdt/gosdt/sdt/control_test::fire"
		}
		if e.Probe != name || (attributed && e.Site == 0) || time.Since(e.Time) > time.Minute {
			t.Fatalf("event %d: %s at %#x, %v", i, e.Probe, e.Site, e.Time)
		}
	}
	if n, err := tr.Read(make([]control.Event, 1), 0); n != 0 || err != nil {
		t.Fatalf("a fire from before the trace was read: %d, %v", n, err)
	}
	snap := agg.Snapshot()
	if len(snap.Rows) != 2 || snap.Rows[0].Count != 5 || snap.Rows[0].Key != "even" || snap.Rows[0].Sum != 20 ||
		snap.Rows[1].Key != "odd" || snap.Rows[1].Min != 1 || snap.Rows[1].Max != 9 || snap.Rows[1].Avg != 5 {
		t.Fatalf("snapshot %+v", snap)
	}
	if h := snap.Rows[0].Hist; len(h) != 4 || h[0].Low != 0 || h[3].Low != 8 {
		t.Fatalf("hist %+v", h)
	}
	tr.Close()
	if _, err := tr.Read(make([]control.Event, 1), 0); err != control.ErrClosed {
		t.Fatalf("Read after Close: %v", err)
	}
	if !consProbe.Enabled() {
		t.Fatal("closing the trace switched off a probe the aggregation holds")
	}
	agg.Close()
	if consProbe.Enabled() {
		t.Fatal("probe still on after its last consumer closed")
	}
	if tr.Drops() != 0 {
		t.Fatalf("%d drops", tr.Drops())
	}
}

// TestArgKinds: every argument kind arrives as its Go value.
func TestArgKinds(t *testing.T) {
	const spec = "constest:::kinds"
	needSwitchable(t, spec)
	tr, err := control.OpenTrace(spec, control.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	kindSite(200, -2.5, true, -7)
	e := readN(t, tr, 1)[0]
	var vals []any
	for _, a := range e.Args {
		vals = append(vals, a.Value)
	}
	if want := []any{uint64(200), -2.5, true, int64(-7)}; !slices.Equal(vals, want) || e.Args[3].Type != "control_test.named" {
		t.Fatalf("values %v (%+v), want %v", vals, e.Args, want)
	}
}

func TestAggOptions(t *testing.T) {
	needSwitchable(t, "constest:::fire")
	for _, o := range []control.AggOptions{{By: "arg9"}, {By: "arg2"}, {By: "bogus"}, {By: "a b"}, {Value: "x"}, {Value: "1n"},
		{Hist: true}, {Value: "n", Hist: true, Linear: &control.Linear{Low: 0, High: 10, Step: 1}},
		{Value: "n", Linear: &control.Linear{Low: 0, High: 10, Step: 0}}, {Value: "n", Linear: &control.Linear{Low: 10, High: 0, Step: 1}},
		{Value: "n", Linear: &control.Linear{Low: 0, High: 1e9, Step: 1}}} {
		if agg, err := control.OpenAggregation("constest:::fire", o); err == nil {
			agg.Close()
			t.Errorf("%+v: no error", o)
		} else {
			t.Logf("%+v: %v", o, err)
		}
	}
	if consProbe.Enabled() {
		t.Fatal("a refused aggregation switched its probe on")
	}
}

// TestTraceDrops: a trace nobody reads drops what its buffer cannot hold, and counts
// it exactly.
func TestTraceDrops(t *testing.T) {
	const spec = "constest:::fire"
	needSwitchable(t, spec)
	tr, err := control.OpenTrace(spec, control.TraceOptions{BufSize: control.MinBufSize})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const fires = 20000
	for i := range fires {
		consSite(i, "x")
	}
	evs := make([]control.Event, 1024)
	read := 0
	for {
		n, err := tr.Read(evs, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		read += n
	}
	if read+int(tr.Drops()) != fires || tr.Drops() == 0 {
		t.Fatalf("read %d, dropped %d, fired %d", read, tr.Drops(), fires)
	}
}

// BenchmarkTrace is the cost of an enabled fire with a trace attached, a reader
// draining it on another goroutine meanwhile.
func BenchmarkTrace(b *testing.B) {
	needSwitchable(b, "constest:::fire")
	tr, err := control.OpenTrace("constest:::fire", control.TraceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		evs := make([]control.Event, 256)
		for {
			if _, err := tr.Read(evs, time.Millisecond); err != nil {
				return
			}
		}
	}()
	d0 := tr.Drops()
	for i := 0; b.Loop(); i++ {
		consSite(i, "hello")
	}
	b.ReportMetric(float64(tr.Drops()-d0)/float64(b.N), "drops/op")
	tr.Close()
	wg.Wait()
}

// goid is the calling goroutine's id, from its stack trace's header.
func goid() uint64 {
	var buf [64]byte
	f := strings.Fields(string(buf[:runtime.Stack(buf[:], false)]))
	id, _ := strconv.ParseUint(f[1], 10, 64)
	return id
}

// TestGoroutineID: each event carries the id of the goroutine that fired it (on
// amd64 and arm64; elsewhere 0).
func TestGoroutineID(t *testing.T) {
	const spec = "constest:::fire"
	needSwitchable(t, spec)
	tr, err := control.OpenTrace(spec, control.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	want := map[int]uint64{}
	for i := range 4 {
		done := make(chan uint64)
		go func() {
			consSite(i, "g")
			done <- goid()
		}()
		want[i] = <-done
	}
	for _, e := range readN(t, tr, 4) {
		i := int(e.Args[0].Value.(int64))
		if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
			if e.Goroutine != 0 {
				t.Errorf("event %d: goroutine %d where none can be told", i, e.Goroutine)
			}
			continue
		}
		if e.Goroutine != want[i] || e.Goroutine == 0 {
			t.Errorf("event %d: goroutine %d, fired by %d", i, e.Goroutine, want[i])
		}
	}
}
