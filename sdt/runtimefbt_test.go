package sdt_test

import (
	"crypto/md5"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gosdt/gosdt/internal/testutil"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
	"github.com/gosdt/gosdt/sdt/internal/goid"
)

// In-process run-time function probes, on a function of the standard library that
// this test binary links and nothing else calls while the test runs.
func TestRuntimeFuncProbe(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const spec = "fbt:fmt:Sprint:"
	probe := func(name string) sdt.ProbeInfo { t.Helper(); return listedOne(t, spec+name) }
	if p := probe("entry"); p.Kind != "runtime" || p.Enabled || len(p.Sites) != 1 || p.Sites[0].State != sdt.Unpatched {
		t.Fatalf("before: %+v", p)
	}
	if _, err := sdt.Enable(spec + "entry"); err != nil {
		t.Fatal(err)
	}
	const n = 100
	for i := range n {
		_ = fmt.Sprint(i)
	}
	p := probe("entry")
	if !p.Enabled || p.Sites[0].State != sdt.Patched || p.Hits != n {
		t.Errorf("after %d calls: %+v", n, p)
	}
	if ret := probe("return"); ret.Sites[0].State != sdt.Refused {
		if _, err := sdt.Enable(spec + "return"); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			_ = fmt.Sprint(i)
		}
		if h := probe("return").Hits; h != n {
			t.Errorf("return events of %d calls: %d", n, h)
		}
	} else {
		t.Logf("returns refused: %s", ret.Sites[0].Reason)
	}
	if _, err := sdt.Disable(spec); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"entry", "return"} {
		if p := probe(name); p.Enabled || (p.Sites[0].State != sdt.Unpatched && p.Sites[0].State != sdt.Refused) {
			t.Errorf("after Disable: %+v", p)
		}
	}
}

// validBytes is utf8.Valid called through a variable: a frameless leaf whose
// first instruction a slot runs out of line (fprobe's DESIGN.md, "Leaves"), on amd64
// and arm64.
var validBytes = utf8.Valid

// A leaf's run-time entry probe counts every call, into sdt's hits and an aggregation;
// its return probe is taken on arm64 (a jump at each RET), and on amd64 refused with
// the reason where its RETs leave no room for a jump, plain or punned (two RETs
// within 5 bytes, or a punned jump with nowhere to go), taken where they do.
func TestRuntimeLeafProbe(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	if raceEnabled {
		t.Skip("under -race utf8.Valid calls the race runtime: not a leaf")
	}
	const spec = "fbt:unicode/utf8:Valid:"
	probe := func(name string) sdt.ProbeInfo { t.Helper(); return listedOne(t, spec+name) }
	if ret := probe("return"); ret.Sites[0].State == sdt.Refused && (runtime.GOARCH != "amd64" || !strings.Contains(ret.Sites[0].Reason, "RET") && !strings.Contains(ret.Sites[0].Reason, "punned")) {
		t.Errorf("a leaf's return probe: %+v", ret.Sites[0])
	}
	agg, err := control.OpenAggregation(spec+"entry", control.AggOptions{By: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	if _, err := sdt.Enable(spec + "entry"); err != nil {
		t.Fatal(err)
	}
	defer sdt.Disable(spec)
	const n = 1000
	for i := range n {
		if !validBytes(strconv.AppendInt(nil, int64(i), 10)) {
			t.Fatal("Valid said no")
		}
	}
	if p := probe("entry"); p.Sites[0].State != sdt.Patched || p.Hits != n {
		t.Errorf("after %d calls: %v %d hits", n, p.Sites[0].State, p.Hits)
	}
	snap := agg.Snapshot()
	var got int64
	for _, r := range snap.Rows {
		got += r.Count
	}
	if got != n {
		t.Errorf("the aggregation counted %d of %d calls: %+v", got, n, snap)
	}
}

// md5Hash.Size is crypto/md5's (*digest).Size, a frameless leaf with one RET that
// ends its code (before the linker's padding on amd64): its return probe is a jump
// over that RET (fprobe's DESIGN.md, "Returns by a jump").
var md5Hash = md5.New()

// A leaf's run-time return probe: N calls give N entries and N returns, each return
// with its latency, into aggregations.
func TestRuntimeLeafReturn(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	if raceEnabled {
		t.Skip("under -race (*digest).Size calls the race runtime: not a leaf")
	}
	const spec = "fbt:crypto/md5:(*digest).Size:"
	probe := func(name string) sdt.ProbeInfo { t.Helper(); return listedOne(t, spec+name) }
	if ret := probe("return"); ret.Sites[0].State == sdt.Refused {
		t.Fatalf("a leaf's return probe refused: %s", ret.Sites[0].Reason)
	}
	entries, err := control.OpenAggregation(spec+"entry", control.AggOptions{By: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer entries.Close()
	rets, err := control.OpenAggregation(spec+"return", control.AggOptions{By: "probe", Value: "latency_ns"})
	if err != nil {
		t.Fatal(err)
	}
	defer rets.Close()
	defer sdt.Disable(spec)
	// Fewer than a ring: a leaf's entry cannot wait for the reader, so a burst beyond
	// its rings between two drains is dropped, counted (fprobe's DESIGN.md).
	const n = 200
	for range n {
		if md5Hash.Size() != md5.Size {
			t.Fatal("Size returned a wrong value")
		}
	}
	for name, agg := range map[string]*control.Aggregation{"entry": entries, "return": rets} {
		snap := agg.Snapshot()
		var got int64
		for _, r := range snap.Rows {
			got += r.Count
			if name == "return" && (r.Min < 0 || r.Max <= 0) {
				t.Errorf("returns' latencies: %+v", r)
			}
		}
		if got != n {
			t.Errorf("the %s aggregation counted %d of %d calls: %+v", name, got, n, snap)
		}
	}
}

// TestRuntimeLeafReturnTraced: a leaf's returns by a jump, traced with no predicate,
// go straight into the trace's buffers as other returns do (its return body calls
// the direct writer too, which unpins the P), more than a ring holds: every one
// arrives, with its latency, and the calls go on after the trace closes.
func TestRuntimeLeafReturnTraced(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	if raceEnabled {
		t.Skip("under -race (*digest).Size calls the race runtime: not a leaf")
	}
	const spec = "fbt:crypto/md5:(*digest).Size:return"
	if ret := listedOne(t, spec); ret.Sites[0].State == sdt.Refused {
		t.Fatalf("a leaf's return probe refused: %s", ret.Sites[0].Reason)
	}
	tr, err := control.OpenTrace(spec, control.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * 256 // three rings' worth
	for range n {
		if md5Hash.Size() != md5.Size {
			t.Fatal("Size returned a wrong value")
		}
	}
	evs := make([]control.Event, n+1)
	got := 0
	for deadline := time.Now().Add(10 * time.Second); got < n && time.Now().Before(deadline); {
		k, err := tr.Read(evs[got:], 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs[got : got+k] {
			if lat, ok := e.Args[0].Value.(int64); !ok || lat < 0 {
				t.Fatalf("a return's latency: %+v", e.Args[0])
			}
		}
		got += k
	}
	if got != n || tr.Drops() != 0 {
		t.Errorf("traced %d returns of %d calls, %d dropped", got, n, tr.Drops())
	}
	tr.Close()
	for range n {
		md5Hash.Size()
	}
}

func TestRuntimeFuncProbeRefused(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	for spec, says := range map[string]string{
		"fbt:runtime:mallocgc:entry":            "in runtime",
		"fbt:github.com/gosdt/gosdt/sdt::entry": "", // gosdt's own: refused, or (rules-built) none
		"fbt::*.*:entry":                        "at most",
		"fbt:no/such/package::entry":            "",
	} {
		_, err := sdt.Enable(spec)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("Enable(%q): %v, want an error saying %q", spec, err, says)
		}
		if says != "at most" && !errors.Is(err, sdt.ErrNoMatch) {
			t.Errorf("Enable(%q): %v, want ErrNoMatch", spec, err)
		}
	}
	// fbt:::entry names the functions rules instrumented, not every function.
	if _, err := sdt.Enable("fbt:::entry"); !errors.Is(err, sdt.ErrNoMatch) {
		t.Errorf("Enable(fbt:::entry) in a program without rules: %v", err)
	}
}

// BenchmarkListRuntime lists every function of the test binary as run-time probes
// would take them: what `sdtctl list -p PID 'fbt::*.*:'` costs the process.
func BenchmarkListRuntime(b *testing.B) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		b.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	n := 0
	for b.Loop() {
		ps, err := sdt.List("fbt::*.*:entry")
		if err != nil {
			b.Fatal(err)
		}
		n = len(ps)
	}
	b.ReportMetric(float64(n), "funcs")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*max(n, 1)), "ns/func")
}

// formatInt is strconv.FormatInt called through a variable: a call of a function
// that has code of its own, which run-time probes take (and nothing else in this test
// binary calls while the benchmark runs).
var formatInt = strconv.FormatInt

// BenchmarkRuntimeProbeCall is what a call of a function with run-time probes costs:
// off (its own bytes back), its entry probe on with nobody consuming (a count), and
// entry and return into an aggregation (count by probe).
func BenchmarkRuntimeProbeCall(b *testing.B) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		b.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const spec = "fbt:strconv:FormatInt:"
	call := func(b *testing.B) {
		for b.Loop() {
			formatInt(5, 10)
		}
	}
	b.Run("off", call)
	b.Run("entry", func(b *testing.B) {
		if _, err := sdt.Enable(spec + "entry"); err != nil {
			b.Fatal(err)
		}
		defer sdt.Disable(spec + "entry")
		call(b)
	})
	b.Run("entry+return-aggregation", func(b *testing.B) {
		agg, err := control.OpenAggregation(spec, control.AggOptions{By: "probe"})
		if err != nil {
			b.Fatal(err)
		}
		defer agg.Close()
		before := returnHits(b, spec)
		call(b)
		// How many of the calls' returns were delivered (the rest were dropped, and
		// counted): List delivers those still waiting in the ring first.
		b.ReportMetric(100*float64(returnHits(b, spec)-before)/float64(b.N), "%returns")
	})
}

// returnHits is how many return events of spec's function were delivered.
func returnHits(b *testing.B, spec string) uint64 {
	ps, err := sdt.List(spec + "return")
	if err != nil || len(ps) != 1 {
		b.Fatalf("List: %v %+v", err, ps)
	}
	return ps[0].Hits
}

// Run-time probes switched on and off through the registry, with an aggregation
// consuming them, while goroutines call the function (one of them never yielding):
// every call returns what it must, and the process survives GC and preemption.
func TestRuntimeFuncProbeWhileCalled(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const spec = "fbt:strconv:FormatInt:"
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("GOMAXPROCS=", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			stop := make(chan struct{})
			wrong := make(chan string, 1)
			done := make(chan int, 5)
			for g := range 5 {
				go func() {
					calls := 0
					for i := int64(g); ; i += 5 {
						if g == 0 || i%64 != 0 { // goroutine 0 never blocks or yields on its own
							if got := formatInt(i, 10); got != decimal(i) {
								select {
								case wrong <- fmt.Sprintf("FormatInt(%d) = %q", i, got):
								default:
								}
							}
							calls++
						} else {
							runtime.GC()
						}
						select {
						case <-stop:
							done <- calls
							return
						default:
						}
					}
				}()
			}
			cycles := 60
			if testing.Short() {
				cycles = 20
			}
			for i := range cycles {
				agg, err := control.OpenAggregation(spec, control.AggOptions{By: "probe"})
				if err != nil {
					t.Fatal(err)
				}
				if i%2 == 0 {
					if _, err := sdt.Enable(spec + "entry"); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Millisecond)
				agg.Close()
				if i%2 == 0 {
					if _, err := sdt.Disable(spec + "entry"); err != nil {
						t.Fatal(err)
					}
				}
			}
			close(stop)
			total := 0
			for range 5 {
				total += <-done
			}
			select {
			case w := <-wrong:
				t.Fatal(w)
			default:
			}
			for _, name := range []string{"entry", "return"} {
				ps, _ := sdt.List(spec + name)
				if len(ps) != 1 || ps[0].Enabled {
					t.Fatalf("after the cycles, %s: %+v", name, ps)
				}
			}
			t.Logf("%d calls, %d attach/detach cycles", total, cycles)
		})
	}
}

// decimal is i in decimal, without strconv.
func decimal(i int64) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for u := uint64(i); u > 0; u /= 10 {
		n--
		b[n] = byte('0' + u%10)
	}
	return string(b[n:])
}

// Bursts of calls far faster than return events are delivered, from several
// goroutines at once: every call's entry and return reach the aggregation (a call
// waits at its entry while its function's ring is half full), none is dropped.
func TestRuntimeReturnBurstExact(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const spec = "fbt:strconv:FormatInt:"
	calls := 20000
	if testing.Short() {
		calls = 5000
	}
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("GOMAXPROCS=", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			agg, err := control.OpenAggregation(spec, control.AggOptions{By: "probe"})
			if err != nil {
				t.Fatal(err)
			}
			defer agg.Close()
			const goroutines = 4
			done := make(chan bool)
			for g := range goroutines {
				go func() {
					ok := true
					for i := range calls {
						v := int64(g*calls + i)
						ok = ok && formatInt(v, 10) == decimal(v)
					}
					done <- ok
				}()
			}
			for range goroutines {
				if !<-done {
					t.Error("FormatInt returned a wrong value while probed")
				}
			}
			want := int64(goroutines * calls)
			// One snapshot, at once: it delivers the return events waiting in the ring
			// before it reads.
			counts := map[string]int64{}
			for _, r := range agg.Snapshot().Rows {
				counts[r.Key[strings.LastIndexByte(r.Key, ':')+1:]] += r.Count
			}
			ps, _ := sdt.List(spec + "return")
			var dropped int64
			if len(ps) > 0 && len(ps[0].Sites) > 0 {
				if i := strings.Index(ps[0].Sites[0].Reason, " return events dropped"); i >= 0 {
					dropped, _ = strconv.ParseInt(ps[0].Sites[0].Reason[strings.LastIndexByte(ps[0].Sites[0].Reason[:i], ' ')+1:i], 10, 64)
				}
			}
			// Under an emulator a call's wait for room (at most maxWait) can run out
			// before the slowed reader makes it: what it then loses is counted, exactly.
			if testutil.Emulated() && counts["entry"] == want && counts["return"]+dropped == want {
				if dropped > 0 {
					t.Logf("under %s: %d of %d return events dropped (counted): the waits ran out", testutil.Emulator(), dropped, want)
				}
				return
			}
			if counts["entry"] != want || counts["return"] != want {
				t.Fatalf("%d calls: %d entry and %d return events folded, want %d each; %+v", want, counts["entry"], counts["return"], want, ps[0].Sites)
			}
		})
	}
}

// A run-time return event, delivered by another goroutine than the one that returned,
// carries the id of the one that returned, as its entry event does.
func TestRuntimeReturnGoroutine(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const spec = "fbt:strconv:FormatInt:"
	tr, err := control.OpenTrace(spec, control.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const calls = 3
	ids := make(chan uint64, 2)
	for range 2 {
		go func() {
			for i := range calls {
				formatInt(int64(i), 10)
			}
			ids <- goid.Own()
		}()
	}
	want := map[uint64]int{<-ids: 0, <-ids: 0}
	got := map[string]map[uint64]int{"entry": {}, "return": {}}
	evs := make([]control.Event, 64)
	for deadline, n := time.Now().Add(10*time.Second), 0; n < 4*calls && time.Now().Before(deadline); {
		m, err := tr.Read(evs, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs[:m] {
			got[e.Probe[strings.LastIndexByte(e.Probe, ':')+1:]][e.Goroutine]++
		}
		n += m
	}
	for name, byG := range got {
		for id := range want {
			if byG[id] != calls {
				t.Errorf("%s events by goroutine: %v, want %d from each of %v", name, byG, calls, want)
				break
			}
		}
	}
}

// A reader sees every return made before it reads, with no wait: a Snapshot, an
// Interval and a Close of an aggregation each count exactly the calls made before
// them, entries and returns alike, though the drain goroutine delivers return events
// only now and then.
func TestRuntimeReturnFlushedOnRead(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const spec = "fbt:strconv:FormatInt:"
	count := func(s control.Snapshot) (entries, returns int64) {
		for _, r := range s.Rows {
			switch r.Key[strings.LastIndexByte(r.Key, ':')+1:] {
			case "entry":
				entries += r.Count
			case "return":
				returns += r.Count
			}
		}
		return entries, returns
	}
	call := func(n int) {
		for i := range n {
			if formatInt(int64(i), 10) == "" {
				t.Fatal("FormatInt returned nothing")
			}
		}
	}
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("GOMAXPROCS=", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			agg, err := control.OpenAggregation(spec, control.AggOptions{By: "probe"})
			if err != nil {
				t.Fatal(err)
			}
			defer agg.Close()
			for round := range 5 {
				// fewer calls than a ring holds: none waits at its entry for a reader,
				// so only the snapshot's flush delivers what this round left in it
				call(300)
				if e, r := count(agg.Snapshot()); e != int64(300*(round+1)) || r != e {
					t.Fatalf("round %d: Snapshot counts %d entries and %d returns, want %d each", round, e, r, 300*(round+1))
				}
			}
			call(100)
			if e, r := count(agg.Interval()); e != 1600 || r != 1600 {
				t.Fatalf("the first Interval counts %d entries and %d returns, want 1600 each", e, r)
			}
			call(7)
			if e, r := count(agg.Interval()); e != 7 || r != 7 {
				t.Fatalf("the next Interval counts %d entries and %d returns, want 7 each", e, r)
			}
		})
	}
}

// A run-time return event's time is when its function returned, not when the drain
// delivered it: ordered by time, one goroutine's calls, 20 us apart, alternate entry,
// return, entry... (stamped at delivery, up to a drain period later, a return came
// after the entries of the calls made before the drain ran). A trace converts each
// batch it reads with the clock of that read: events of two batches may be a few
// hundred ns off each other, which the calls' spacing leaves room for.
func TestRuntimeReturnTime(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	if testutil.Emulated() {
		// qemu's counter moves by the microsecond, as long as a probed call takes
		// there: an entry and its return often carry the same time, and ordering by
		// time cannot tell them apart (fprobe's TestReturnTime checks the stamps
		// against the counter itself, under the emulator too).
		t.Skipf("under %s the CPU counter moves by the microsecond, as long as a call", testutil.Emulator())
	}
	const spec = "fbt:strconv:FormatInt:"
	tr, err := control.OpenTrace(spec, control.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const calls = 50
	done := make(chan uint64)
	go func() {
		for i := range calls {
			formatInt(int64(i), 10)
			for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
			}
		}
		done <- goid.Own()
	}()
	id := <-done
	var mine []control.Event
	evs := make([]control.Event, 256)
	for deadline := time.Now().Add(10 * time.Second); len(mine) < 2*calls && time.Now().Before(deadline); {
		m, err := tr.Read(evs, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs[:m] {
			if e.Goroutine == id {
				mine = append(mine, e)
			}
		}
	}
	if len(mine) != 2*calls {
		t.Fatalf("%d events of the calling goroutine, want %d", len(mine), 2*calls)
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].Time.Before(mine[j].Time) })
	for i, e := range mine {
		want := "entry"
		if i%2 == 1 {
			want = "return"
		}
		if got := e.Probe[strings.LastIndexByte(e.Probe, ':')+1:]; got != want {
			for j := max(0, i-3); j < min(len(mine), i+3); j++ {
				t.Logf("%d %s %s %v", j, mine[j].Time.Format("15:04:05.000000000"), mine[j].Probe, mine[j].Args)
			}
			t.Fatalf("event %d in time order is %s, want %s", i, got, want)
		}
	}
}

// listedOne is what sdt.List says of spec, which must match exactly one probe.
func listedOne(t *testing.T, spec string) sdt.ProbeInfo {
	t.Helper()
	ps, err := sdt.List(spec)
	if err != nil || len(ps) != 1 {
		t.Fatalf("List(%q): %v %+v", spec, err, ps)
	}
	return ps[0]
}

// Traces with --where on one function's returns, more than the return path runs
// predicates for (64), and one without: each gets exactly its returns, and counts
// the others filtered, whether the return path ran its predicate (the first 64) or
// the drain did (the rest, delivered by the read's flush), at GOMAXPROCS 1, 2, 8.
func TestRuntimeReturnWhereTraces(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("run-time function probes are not written for %s/%s yet", runtime.GOOS, runtime.GOARCH)
	}
	const spec, traces, calls = "fbt:strconv:FormatInt:return", 70, 200
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprint("GOMAXPROCS=", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var trs []*control.Trace
			for i := range traces {
				// trace 0 has no predicate; odd ones pass every return, even ones none
				o := control.TraceOptions{BufSize: 64 << 10}
				switch {
				case i == 0:
				case i%2 == 1:
					o.Where = "latency_ns >= 0 && latency_ns != -5"
				default:
					o.Where = "latency_ns < 0 || arg0 == -5"
				}
				tr, err := control.OpenTrace(spec, o)
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				trs = append(trs, tr)
			}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range calls / 4 {
						if formatInt(int64(g*1000+i), 10) == "" {
							t.Error("FormatInt returned nothing")
						}
					}
				})
			}
			wg.Wait()
			evs := make([]control.Event, calls+1)
			for i, tr := range trs {
				want, filtered := calls, uint64(0)
				if i > 0 && i%2 == 0 {
					want, filtered = 0, calls
				}
				// Those the drain delivers arrive within its period (a trace's
				// read does not flush the rings): read until they are all in.
				n := 0
				for deadline := time.Now().Add(10 * time.Second); ; {
					k, err := tr.Read(evs[n:], 20*time.Millisecond)
					if err != nil {
						t.Fatal(err)
					}
					n += k
					if n >= want && tr.Filtered() >= filtered || time.Now().After(deadline) {
						break
					}
				}
				k, _ := tr.Read(evs[n:], 20*time.Millisecond)
				if n += k; n != want || tr.Filtered() != filtered || tr.Drops() != 0 {
					t.Fatalf("trace %d: %d returns, %d filtered, %d dropped: want %d, %d, 0", i, n, tr.Filtered(), tr.Drops(), want, filtered)
				}
			}
		})
	}
}
