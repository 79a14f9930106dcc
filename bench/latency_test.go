package bench

import (
	"flag"
	"fmt"
	"github.com/gosdt/gosdt/internal/hooks"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt"
)

var toggleProbe = sdt.Define1[int]("btoggle", "site", "v")

//go:noinline
func toggleSite(v int) { sdt.Probe1(&toggleProbe, v) }

// BenchmarkToggle is the latency of switching one probe with one site; each op is
// one switch (Enable and Disable alternate), through each protocol, at GOMAXPROCS
// 1, 2 and 8, with busy goroutines (one per P) of three kinds:
//
//	none   only the benchmark goroutine
//	yield  goroutines that call runtime.Gosched every 4096 iterations, as real
//	       goroutines reach a scheduling point
//	spin   CPU-bound loops with no scheduling point, which only preemption stops
//
// Every switch must succeed: a rendezvous is a stop-the-world, which preempts what runs.
//
// Enable and Disable match the spec against every site of the process: this test
// binary defines more than 2000 probes (the kernels), which the latency includes.
func BenchmarkToggle(b *testing.B) {
	toggleSite(0)
	for _, proto := range []patch.Protocol{patch.Atomic, patch.Rendezvous} {
		for _, procs := range []int{1, 2, 8} {
			for _, busy := range []string{"none", "yield", "spin"} {
				name := fmt.Sprintf("protocol=%v/procs=%d/busy=%s", proto, procs, busy)
				b.Run(name, func(b *testing.B) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					defer hooks.SetPatchOptions(hooks.SetPatchOptions(patch.Options{Protocol: proto}))
					stop := sync.OnceFunc(startBusy(busy, procs))
					defer stop()
					var st toggleState
					if n := fixedCount(); n > 0 {
						// A trial switch there and back, untimed; see fixedBudget.
						start := time.Now()
						for range 2 {
							if err := st.toggle(); err != nil {
								b.Fatal(err)
							}
						}
						if per := time.Since(start) / 2; time.Duration(n)*per > fixedBudget {
							b.Skipf("-benchtime %dx at ~%v per switch would take %v (> %v); use a time -benchtime",
								n, per.Round(time.Microsecond), (time.Duration(n) * per).Round(time.Second), fixedBudget)
						}
					}
					for b.Loop() {
						if err := st.toggle(); err != nil {
							b.Fatal(err)
						}
					}
					stop()
					if st.on {
						if _, err := sdt.Disable("btoggle:::site"); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// fixedBudget bounds a sub-benchmark under -benchtime Nx: a rendezvous against busy
// goroutines costs up to a sysmon preemption (~100 ms) per switch, so -benchtime 200x
// spent minutes in them. A time -benchtime bounds itself (b.N adapts); under Nx a
// sub-benchmark whose trial switch says it would take longer than this is skipped,
// with its estimated cost in the skip message.
const fixedBudget = 2 * time.Second

// fixedCount is N of -test.benchtime Nx, or 0 for a time.
func fixedCount() int {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return 0
	}
	s := f.Value.String()
	if !strings.HasSuffix(s, "x") {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, "x"))
	if err != nil {
		return 0
	}
	return n
}

// toggleState alternates Enable and Disable of btoggle:::site.
type toggleState struct{ on bool }

// toggle switches the probe.
func (st *toggleState) toggle() error {
	var err error
	if !st.on {
		_, err = sdt.Enable("btoggle:::site")
	} else {
		_, err = sdt.Disable("btoggle:::site")
	}
	if err == nil {
		st.on = !st.on
	}
	return err
}

// busySink keeps the busy loops' work live.
var busySink atomic.Uint64

// startBusy starts n busy goroutines of the given kind and returns what stops them.
func startBusy(kind string, n int) (stop func()) {
	if kind == "none" {
		return func() {}
	}
	var quit atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for i := 0; !quit.Load(); i++ {
				x = x*6364136223846793005 + 1442695040888963407
				if kind == "yield" && i%4096 == 0 {
					runtime.Gosched()
				}
			}
			busySink.Add(x)
		}()
	}
	return func() { quit.Store(true); wg.Wait() }
}
