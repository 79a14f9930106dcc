package bench

import (
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/bench/internal/fbtkern"
	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt"
)

const fbtSpec = "fbt:github.com/gosdt/gosdt/bench/internal/fbtkern:fbtkern.Work:"

// BenchmarkFBT is the cost of one call of fbtkern.Work (a leaf function; see
// fbt_callgrind.sh for the deterministic figures) instrumented by bench/fbt.rules:
//
//	off       both probes off: the two gates
//	counter   entry and return enabled, no consumer but the sites' hit counts
//	agg       entry and return into a counting aggregation, attached as sdtctl stat
//	          attaches it (the control socket of this process)
//	hooks     entry and return with an in-process hook pair counting calls
//
// It needs the rules: go test -toolexec "sdtctl toolexec -rules $PWD/bench/fbt.rules"
// -run '^$' -bench FBT ./bench/ (elsewhere it skips).
func BenchmarkFBT(b *testing.B) {
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

// statSelf attaches a counting aggregation (by probe) to spec through this process's
// control socket, as sdtctl stat does, and waits until its sites are on.
func statSelf(b *testing.B, spec string) (stop func()) {
	b.Helper()
	c, err := net.Dial("unix", ctlproto.SocketPath(os.Getpid()))
	if err != nil {
		b.Skipf("no control socket: %v", err)
	}
	ctlproto.WriteFrame(c, &ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version})
	if _, err := ctlproto.ReadFrame(c); err != nil {
		b.Fatal(err)
	}
	if err := ctlproto.WriteFrame(c, &ctlproto.Request{Op: ctlproto.OpStat, Spec: spec, By: "probe",
		IntervalMS: 1000, DurationMS: 3_600_000}); err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			if _, err := ctlproto.ReadFrame(c); err != nil {
				return
			}
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); ; {
		infos, _ := sdt.List(spec)
		on := len(infos) > 0
		for _, pi := range infos {
			on = on && pi.Enabled
		}
		if on {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the aggregation did not switch the probes on")
		}
		time.Sleep(time.Millisecond)
	}
	return func() {
		c.Close()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			infos, _ := sdt.List(spec)
			if len(infos) > 0 && !infos[0].Enabled {
				return
			}
		}
	}
}
