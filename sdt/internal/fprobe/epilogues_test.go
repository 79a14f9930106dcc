package fprobe

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// epilogueShape names the shape of a return site on amd64 as the stub meets it: the
// instruction the call covers, and whether NOPs stand between POPQ BP and the RET.
func epilogueShape(f *Func, i int) string {
	r := f.retSites[i]
	s := "ADDQ $imm32"
	switch {
	case len(r.Orig) >= 4 && r.Orig[0] == 0x48 && r.Orig[1] == 0x83 && r.Orig[2] == 0xEC && r.Orig[3] == 0x80:
		s = "SUBQ $-128"
	case r.Pad:
		s = "ADDQ $imm8"
	}
	if text(uintptr(r.Ret)-1, 1)[0] != 0x5D {
		s += ", NOPs"
	}
	return s
}

// TestEpilogueShapes: every function of target.Epis, whose sizes give the epilogue
// each shape the assembler writes, takes an entry and a return probe; with both on
// under calls from several goroutines (stacks growing, the GC running), every call
// gives one entry event with its argument and one return event with its result, and
// every call still returns what it returns unprobed. On amd64 the set must hold an
// epilogue with NOPs before its RET and one of SUBQ $-128, SP, or the test proves
// nothing about them: then the sizes want changing.
func TestEpilogueShapes(t *testing.T) {
	fs := make([]*Func, len(target.Epis))
	shapes := map[string]int{}
	for i := range fs {
		fs[i] = lookup(t, fmt.Sprintf("Epi%02d", i))
		if err := fs[i].ReturnErr(); err != nil {
			t.Fatalf("Epi%02d: %v", i, err)
		}
		if runtime.GOARCH == "amd64" {
			for j := range fs[i].retSites {
				shapes[epilogueShape(fs[i], j)]++
			}
		}
	}
	t.Logf("epilogues: %v", shapes)
	if runtime.GOARCH == "amd64" {
		nops, sub := 0, 0
		for s, n := range shapes {
			if s == "SUBQ $-128" || s == "SUBQ $-128, NOPs" {
				sub += n
			}
			if len(s) > 6 && s[len(s)-4:] == "NOPs" {
				nops += n
			}
		}
		if nops == 0 || sub == 0 {
			t.Fatalf("target.Epis has %d epilogues with NOPs before RET and %d of SUBQ $-128: change their sizes", nops, sub)
		}
	}

	var (
		entries [len(target.Epis)]atomic.Int64
		badArg  atomic.Int64
		mu      [len(target.Epis)]sync.Mutex
		evs     [len(target.Epis)][]Return
	)
	const X = 1000 // arguments -X..X-1
	drain := func(i int) func() {
		return func() {
			buf := make([]Return, 64)
			mu[i].Lock()
			defer mu[i].Unlock()
			for {
				n := fs[i].ReadReturns(buf)
				if n == 0 {
					return
				}
				evs[i] = append(evs[i], buf[:n]...)
			}
		}
	}
	before := make([]Stats, len(fs))
	var on, off []Change
	for i, f := range fs {
		drainAll(f) // what an earlier test left unread is not this test's
		before[i] = f.Stats()
		i := i
		on = append(on, Change{Func: f, Return: true, Drain: drain(i), Entry: func(f *Func, a *Args) {
			if x := int64(a.Word(0)); x < -X || x >= X {
				badArg.Add(1)
			}
			entries[i].Add(1)
		}})
		off = append(off, Change{Func: f})
	}
	if err := Set(on); err != nil {
		t.Fatal(err)
	}
	const G, N = 4, 3000
	var (
		wg    sync.WaitGroup
		calls [len(target.Epis)]atomic.Int64
		sums  [len(target.Epis)]atomic.Int64
		bad   atomic.Int64
		stop  atomic.Bool
	)
	go func() { // the GC, shrinking and scanning stacks while calls run
		for !stop.Load() {
			runtime.GC()
		}
	}()
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < N; n++ {
				x := (n*7919+g*131)%(2*X) - X
				i := (n + g) % len(target.Epis)
				var r int
				deepen(n%50, func() { r = target.Epis[i](x) })
				if r != target.EpiWant(i, x) {
					bad.Add(1)
				}
				calls[i].Add(1)
				sums[i].Add(int64(r))
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	if err := Set(off); err != nil {
		t.Fatal(err)
	}
	if n := bad.Load(); n != 0 {
		t.Errorf("%d calls returned a wrong value", n)
	}
	if n := badArg.Load(); n != 0 {
		t.Errorf("%d entry events with a wrong argument", n)
	}
	for i, f := range fs {
		drain(i)()
		st := f.Stats()
		rets, dropped := st.Returns-before[i].Returns, st.Dropped-before[i].Dropped
		if c := calls[i].Load(); entries[i].Load() != c || rets != c {
			t.Errorf("Epi%02d: %d calls, %d entry events, %d return events", i, c, entries[i].Load(), rets)
		}
		if int64(len(evs[i]))+dropped != rets {
			t.Errorf("Epi%02d: %d events read, %d dropped, %d counted", i, len(evs[i]), dropped, rets)
		}
		if dropped == 0 {
			var sum int64
			for _, e := range evs[i] {
				sum += int64(e.Results[0])
			}
			if sum != sums[i].Load() {
				t.Errorf("Epi%02d: the return events' results add up to %d, the calls' to %d", i, sum, sums[i].Load())
			}
		}
		for j, r := range f.retSites {
			if !equal8(text(uintptr(r.Addr), len(r.Orig)), r.Orig) {
				t.Errorf("Epi%02d: return %d after detach: % x, want % x", i, j, text(uintptr(r.Addr), len(r.Orig)), r.Orig)
			}
		}
	}
}

// deepen runs f n frames deeper, so that calls run at different depths and some grow
// the stack.
//
//go:noinline
func deepen(n int, f func()) {
	var pad [16]int
	pad[n%16] = n
	if n == 0 {
		f()
		return
	}
	deepen(n-1, f)
	runtime.KeepAlive(pad)
}
