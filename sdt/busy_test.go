package sdt_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt"
)

// TestToggleLayouts checks that every run-time switch of every site in this binary is
// one aligned store, and that on amd64 every disabled site is one instruction: the
// generated functions put sites at every address modulo 8, with rel8 and rel32 jumps,
// and the sled must switch each with one byte (amd64: the rel8 jump's displacement or
// the rel32 jump's opcode) and begin with its jump, or be one aligned instruction
// (arm64).
func TestToggleLayouts(t *testing.T) {
	if !patch.Supported() {
		t.Skipf("no patching on %s/%s: probes work through their branch check", runtime.GOOS, runtime.GOARCH)
	}
	ls := sdt.ToggleLayouts("aligned")
	if len(ls) < len(alignedFuncs) {
		t.Fatalf("%d patchable sites of the aligned probes, want %d", len(ls), len(alignedFuncs))
	}
	residues := map[string][]int{} // the disabled sled's jump -> the site residues modulo 8 seen
	for _, l := range ls {
		at := l.Addr + uintptr(l.At)
		if !patch.CanAtomic(at, l.Toggle) {
			t.Errorf("site %#x: %d-byte toggle at +%d (%#x) is not one atomic store", l.Addr, l.Toggle, l.At, at)
		}
		kind := fmt.Sprintf("%d-byte toggle", l.Toggle)
		if runtime.GOARCH == "amd64" {
			switch {
			case l.Toggle != 1:
				t.Errorf("site %#x: %d-byte toggle, want one byte", l.Addr, l.Toggle)
			case l.Off[0] == 0xEB:
				kind = "JMP rel8"
			case l.Off[0] == 0xE9:
				kind = "JMP rel32"
			default:
				t.Errorf("site %#x: disabled sled % x does not begin with its jump", l.Addr, l.Off)
			}
		}
		if r := int(l.Addr % 8); !slices.Contains(residues[kind], r) {
			residues[kind] = append(residues[kind], r)
		}
	}
	for k, rs := range residues {
		slices.Sort(rs)
		t.Logf("%s at sites with addr%%8 in %v", k, rs)
	}
	if runtime.GOARCH == "amd64" && !raceEnabled { // -race moves and reshapes the fire blocks
		for _, k := range []string{"JMP rel8", "JMP rel32"} {
			if len(residues[k]) != 8 {
				t.Errorf("%s only at addr%%8 in %v: the generated sites (internal/genaligned) no longer cover every residue", k, residues[k])
			}
		}
	}
}

// TestTortureBusy switches sites at every alignment, all in one batch, while workers
// that never block, allocate or yield run them: only async preemption takes their P.
// Every Enable and Disable must succeed (the default protocol never needs every P),
// and every call made inside a settled state must count exactly.
func TestTortureBusy(t *testing.T) {
	if runtime.GOARCH == "wasm" {
		t.Skip("wasm runs goroutines on one thread without preemption: busy workers would never yield")
	}
	toggles := 4000
	switch {
	case raceEnabled:
		toggles = 400
	case testing.Short(), testutil.Emulated():
		toggles = 1000
	}
	if v := os.Getenv("SDT_TORTURE_TOGGLES"); v != "" {
		fmt.Sscan(v, &toggles)
	}
	for _, procs := range []int{1, 2, 8} {
		n := toggles
		if procs == 1 {
			// The controller yields to let the workers call, and runs again only
			// when sysmon preempts one of them (10ms slices).
			n = max(toggles/400, 10)
		}
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) { tortureBusy(t, procs, n) })
	}
}

// busyWorker counts what one worker saw; padded so workers write their own lines.
type busyWorker struct {
	seen                atomic.Int64 // fires its handler saw
	calls               atomic.Int64
	judgedOn, judgedOff atomic.Int64
	_                   [32]byte
}

func tortureBusy(t *testing.T, procs, toggles int) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	defer debug.SetGCPercent(debug.SetGCPercent(5))

	const workers = 8
	var ws [workers]busyWorker
	defer alignedNear.Attach(func(w, _ uint64) { ws[w].seen.Add(1) })()
	defer alignedFar.Attach(func(w, _, _, _, _, _ uint64) { ws[w].seen.Add(1) })()

	var stop atomic.Bool
	var failed atomic.Pointer[error]
	fail := func(err error) { failed.CompareAndSwap(nil, &err) }
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			st := &ws[w]
			for i := 0; !stop.Load(); i++ {
				f := alignedFuncs[i%len(alignedFuncs)]
				before, seen := stable.Load(), st.seen.Load()
				f(uint64(w), uint64(i))
				after := stable.Load()
				st.calls.Add(1)
				if before != after || before == 0 {
					continue
				}
				got := st.seen.Load() - seen
				if before > 0 && got == 0 && emulated {
					continue // qemu-user may run a stale translation once; see staleUnderEmulation
				}
				switch {
				case before > 0 && got != 1:
					fail(fmt.Errorf("worker %d, function %d: enabled (epoch %d) but %d fires seen", w, i%len(alignedFuncs), before, got))
					return
				case before < 0 && got != 0:
					fail(fmt.Errorf("worker %d: disabled (epoch %d) but %d fires seen", w, -before, got))
					return
				case before > 0:
					st.judgedOn.Add(1)
				default:
					st.judgedOff.Add(1)
				}
			}
		})
	}
	wg.Go(func() { // garbage, so that GC cycles overlap the switches
		var keep [][]byte
		for !stop.Load() {
			keep = append(keep, make([]byte, 4096))
			if len(keep) > 256 {
				keep = nil
			}
			runtime.Gosched()
		}
	})

	start := time.Now()
	var lat []time.Duration
	epoch, on := int64(0), false
	for done := 0; done < toggles && failed.Load() == nil; done++ {
		stable.Store(0)
		t0 := time.Now()
		var err error
		if on {
			_, err = sdt.Disable("aligned:::")
		} else {
			_, err = sdt.Enable("aligned:::")
		}
		lat = append(lat, time.Since(t0))
		if err != nil {
			fail(fmt.Errorf("toggle %d: %w", done+1, err))
			break
		}
		on = !on
		epoch++
		if on {
			stable.Store(epoch)
		} else {
			stable.Store(-epoch)
		}
		busyDwell(ws[:])
	}
	stable.Store(0)
	if _, err := sdt.Disable("aligned:::"); err != nil {
		fail(err)
	}
	stop.Store(true)
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
	var on_, off int64
	for i := range ws {
		on_ += ws[i].judgedOn.Load()
		off += ws[i].judgedOff.Load()
	}
	// A switch's latency includes the controller's own waits for a P: it competes with
	// the workers, and a preempted goroutine queues behind them for a time slice.
	slices.Sort(lat)
	lat = append(lat, 0) // never empty; the extra zero sorts first and is not reported as max
	slices.Sort(lat)
	t.Logf("%d switches of %d sites in %v, one switch p50 %v, p99 %v, max %v; judged calls: %d enabled, %d disabled",
		epoch, len(sdt.ToggleLayouts("aligned")), time.Since(start).Round(time.Millisecond),
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], on_, off)
	if on_ == 0 || off == 0 {
		t.Errorf("no call was judged in one of the states (on %d, off %d): the test tested nothing", on_, off)
	}
}

// busyDwell waits until the workers made a few calls in the settled state, or briefly.
func busyDwell(ws []busyWorker) {
	sum := func() (n int64) {
		for i := range ws {
			n += ws[i].calls.Load()
		}
		return n
	}
	start, deadline := sum(), time.Now().Add(200*time.Microsecond)
	for sum() < start+2*int64(len(ws)) && time.Now().Before(deadline) {
		if runtime.GOMAXPROCS(0) == 1 {
			runtime.Gosched() // the controller may yield; the workers never do
		}
	}
}
