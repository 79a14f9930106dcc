package bench

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/bench/internal/fbtkern"
	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

const fbtSpec = "fbt:github.com/gosdt/gosdt/bench/internal/fbtkern:fbtkern.Work:"

// BenchmarkFBT is the cost of one call of fbtkern.Work (a leaf function; see
// fbt_callgrind.sh for the deterministic figures) instrumented by bench/fbt.rules:
//
//	off       both probes off: the two gates
//	counter   entry and return enabled, no consumer but the sites' hit counts
//	agg       entry and return into a counting aggregation (control.OpenAggregation,
//	          what sdtctl stat attaches through the control socket)
//	hooks     entry and return with an in-process hook pair counting calls
//	export    what sdtctl export attaches per spec: a trace (drained by a goroutine, as
//	          the control server drains it) and two aggregations by probe, one counting,
//	          one quantizing latency_ns: the traced process's cost of a call exported
//
// It needs the rules: go test -toolexec "sdtctl toolexec -rules $PWD/bench/fbt.rules"
// -run '^$' -bench FBT ./bench/ (elsewhere it skips).
func BenchmarkFBT(b *testing.B) {
	b.ReportAllocs()
	infos, _ := sdt.List(fbtSpec)
	if len(infos) == 0 {
		b.Skip("fbtkern is not instrumented: build with -toolexec 'sdtctl toolexec -rules $PWD/bench/fbt.rules'")
	}
	run := func(b *testing.B) {
		x := 1
		for i := 0; b.Loop(); i++ {
			x = fbtkern.Work(x, i)
		}
		sink = uint64(x)
	}
	b.Run("state=off", run)
	b.Run("state=counter", func(b *testing.B) {
		enable(b, fbtSpec)
		run(b)
	})
	b.Run("state=agg", func(b *testing.B) {
		stop := statSelf(b, fbtSpec)
		defer stop()
		run(b)
	})
	b.Run("state=export", func(b *testing.B) {
		stop := exportSelf(b, fbtSpec)
		defer stop()
		run(b)
	})
	b.Run("state=hooks", func(b *testing.B) {
		var n atomic.Int64
		detach, _, err := sdt.HookFuncs(fbtSpec, 0, sdt.FuncHook{
			Enter: func(*sdt.Call) { n.Add(1) },
			Exit:  func(*sdt.Call) { n.Add(1) },
		})
		if err != nil {
			b.Fatal(err)
		}
		defer detach()
		enable(b, fbtSpec)
		run(b)
		if n.Load() == 0 {
			b.Fatal("hooks did not run")
		}
	})
}

// statSelf attaches a counting aggregation (by probe) to spec, the one sdtctl stat
// attaches through the control socket, and waits until its sites are on.
func statSelf(b *testing.B, spec string) (stop func()) {
	b.Helper()
	agg, err := control.OpenAggregation(spec, control.AggOptions{By: "probe"})
	if err != nil {
		b.Fatal(err)
	}
	return func() { agg.Close() }
}

// exportSelf attaches to spec what sdtctl export attaches through the control socket:
// a trace, read as it fills, and aggregations by probe counting every fire and
// quantizing latency_ns.
func exportSelf(b *testing.B, spec string) (stop func()) {
	b.Helper()
	tr, err := control.OpenTrace(spec, control.TraceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	count, err := control.OpenAggregation(spec, control.AggOptions{By: "probe"})
	if err != nil {
		b.Fatal(err)
	}
	lat, err := control.OpenAggregation(spec, control.AggOptions{By: "probe", Value: "latency_ns", Hist: true})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		evs := make([]control.Event, 1024)
		for {
			if _, err := tr.Read(evs, 10*time.Millisecond); err != nil {
				return
			}
		}
	}()
	return func() {
		tr.Close()
		<-done
		count.Close()
		lat.Close()
	}
}
