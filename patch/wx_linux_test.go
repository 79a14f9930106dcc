//go:build amd64 || arm64

package patch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gosdt/gosdt/internal/testutil"
	"golang.org/x/sys/unix"
)

// denyWX makes mprotect fail the way a W^X policy does (PR_SET_MDWE: EACCES for a
// protection both writable and executable) until the test ends.
func denyWX(t testing.TB, errno unix.Errno) {
	testHookMprotect = func(prot int) unix.Errno {
		if prot&unix.PROT_WRITE != 0 && prot&unix.PROT_EXEC != 0 {
			return errno
		}
		return 0
	}
	t.Cleanup(func() {
		mu.Lock()
		testHookMprotect, wx.refused = nil, 0
		mu.Unlock()
	})
}

// noWXMapping fails the test if any mapping of the process is writable and executable.
func noWXMapping(t testing.TB) {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if p := strings.Fields(s.Text())[1]; p[1] == 'w' && p[2] == 'x' {
			t.Errorf("writable and executable mapping: %s", s.Text())
		}
	}
}

// TestWXRefused: with mprotect refused and the /proc/self/mem fallback off, every
// protocol fails with ErrTextNotWritable, names the cause, and changes nothing.
func TestWXRefused(t *testing.T) {
	for _, errno := range []unix.Errno{unix.EACCES, unix.EPERM} {
		for _, proto := range []Protocol{Auto, Atomic, Rendezvous, Quiescent} {
			t.Run(fmt.Sprintf("%v/%v", errno, proto), func(t *testing.T) {
				resetSite(t)
				denyWX(t, errno)
				before := append([]byte(nil), text(testTargetAddr(), wideLen)...)
				for range 2 { // the first finds out, the second knows
					_, err := setSite(true, len(siteOn), Options{Protocol: proto, NoProcMem: true})
					if !errors.Is(err, ErrTextNotWritable) || !errors.Is(err, errno) ||
						!strings.Contains(err.Error(), "MemoryDenyWriteExecute") {
						t.Fatalf("Apply = %v, want ErrTextNotWritable naming %v and W^X", err, errno)
					}
				}
				if after := text(testTargetAddr(), wideLen); !bytes.Equal(after, before) {
					t.Errorf("text changed: % x -> % x", before, after)
				}
				if testTarget() != 0 {
					t.Error("site switched on")
				}
				checkRX(t)
				noWXMapping(t)
			})
		}
	}
}

// TestWXProcMem: with mprotect refused, batches are written through /proc/self/mem,
// never as a single-store Atomic batch, and no page becomes writable.
func TestWXProcMem(t *testing.T) {
	if testutil.Emulated() {
		// qemu-user maps guest addresses at an offset of its own choosing and does not
		// see writes that bypass its page protection, so its translated code would go
		// stale; and a W^X policy would stop qemu's own code generator anyway.
		testutil.Skip(t, "procmem", "writes through /proc/self/mem are not emulated by qemu-user")
	}
	for _, tc := range []struct {
		proto, want Protocol
		width       int
	}{
		{Auto, Rendezvous, len(siteOn)}, // Auto would have used Atomic
		{Rendezvous, Rendezvous, len(siteOn)},
		{Rendezvous, Rendezvous, wideLen},
		{Quiescent, Quiescent, wideLen},
	} {
		t.Run(fmt.Sprintf("%v/width=%d", tc.proto, tc.width), func(t *testing.T) {
			resetSite(t)
			denyWX(t, unix.EACCES)
			for i, on := range []bool{true, false, true} {
				rep, err := setSite(on, tc.width, Options{Protocol: tc.proto})
				if err != nil {
					t.Fatalf("toggle %d: %v", i, err)
				}
				if rep.Protocol != tc.want || !rep.ProcMem {
					t.Errorf("toggle %d: report %+v, want %v through /proc/self/mem", i, rep, tc.want)
				}
				want := uint64(0)
				if on {
					want = 1
				}
				if got := testTarget(); got != want {
					t.Fatalf("toggle %d: testTarget() = %d, want %d", i, got, want)
				}
				checkRX(t)
			}
			noWXMapping(t)
			// Atomic is a promise of one store, which /proc/self/mem cannot keep.
			if _, err := setSite(false, len(siteOn), Options{Protocol: Atomic}); !errors.Is(err, ErrNotAtomic) {
				t.Errorf("Atomic through /proc/self/mem = %v, want ErrNotAtomic", err)
			}
			if testTarget() != 1 {
				t.Error("refused Atomic batch changed the site")
			}
		})
	}
}

// TestWXProcMemBusy toggles the site through /proc/self/mem while goroutines execute
// it: Auto must take the rendezvous (the kernel's copy is not one store), and every
// call must see the site whole, on or off.
func TestWXProcMemBusy(t *testing.T) {
	if testutil.Emulated() {
		testutil.Skip(t, "procmem", "writes through /proc/self/mem are not emulated by qemu-user")
	}
	resetSite(t)
	denyWX(t, unix.EACCES)
	var stop atomic.Bool
	var bad atomic.Uint64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				if r := testTarget(); r > 1 {
					bad.Add(1)
				}
				if i%4096 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	n := 200
	if testing.Short() {
		n = 50
	}
	for i := range n {
		rep, err := setSite(i%2 == 0, len(siteOn), Options{})
		if err != nil {
			t.Fatalf("toggle %d: %v", i, err)
		}
		if rep.Protocol != Rendezvous || !rep.ProcMem {
			t.Fatalf("toggle %d: report %+v, want the rendezvous through /proc/self/mem", i, rep)
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d calls returned neither 0 nor 1", bad.Load())
	}
	checkRX(t)
	noWXMapping(t)
}

// BenchmarkApplyWX measures one toggle round trip (on, then off) of one site, idle,
// with the pages made RWX around a store and, as where a W^X policy refuses that,
// through /proc/self/mem.
func BenchmarkApplyWX(b *testing.B) {
	for _, procMem := range []bool{false, true} {
		for _, p := range []Protocol{Quiescent, Rendezvous} {
			name := fmt.Sprintf("%v/mprotect", p)
			if procMem {
				name = fmt.Sprintf("%v/procmem", p)
			}
			b.Run(name, func(b *testing.B) {
				resetSite(b)
				if procMem {
					denyWX(b, unix.EACCES)
				}
				o := Options{Protocol: p}
				for b.Loop() {
					for _, on := range []bool{true, false} {
						rep, err := setSite(on, len(siteOn), o)
						if err != nil || rep.ProcMem != procMem {
							b.Fatalf("%+v, %v", rep, err)
						}
					}
				}
			})
		}
	}
}
