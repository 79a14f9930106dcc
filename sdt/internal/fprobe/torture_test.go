package fprobe

import (
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// TestTorture attaches and detaches entry and return probes on functions of every
// argument kind, again and again, while goroutines call them (one never blocks, one
// is parked inside one), the garbage collector runs in a loop and the hooks grow the
// stack and allocate; every call checks its own results and every hook the arguments
// it sees, and the CPU profiler interrupts them all. 0 wrong values, 0 crashes.
func TestTorture(t *testing.T) {
	// Each cycle is two rendezvous (every P stopped) while CPU-bound goroutines run:
	// 1,000 in all take minutes on a loaded two-core VM.
	cycles := map[int]int{1: 300, 2: 400, 8: 300}
	if testing.Short() {
		cycles = map[int]int{1: 50, 2: 50, 8: 50}
	}
	if n, err := strconv.Atoi(os.Getenv("FPROBE_CYCLES")); err == nil {
		cycles = map[int]int{1: n, 2: n, 8: n}
	}
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			torture(t, cycles[procs])
		})
	}
}

var tortureFuncs = []string{"Small", "Large", "Narrow", "Floats", "Check", "Sum", "Apply", "Adder.func1", "Deep", "Panicky", "Wait"}

func torture(t *testing.T, cycles int) {
	var fs []*Func
	only := os.Getenv("TORTURE_FUNCS")
	for _, n := range tortureFuncs {
		if only != "" && !strings.Contains(","+only+",", ","+n+",") {
			continue
		}
		f := lookup(t, n)
		if err := f.ReturnErr(); err != nil {
			t.Logf("entry probe only: %v", err) // the race detector's builds have other epilogues
		}
		fs = append(fs, f)
	}
	if only == "" {
		fs = append(fs, tortureEpis(t)...)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	// The CPU profiler's signals unwind whatever they interrupt: the stubs, their
	// frames, the functions' frames around them.
	if err := pprof.StartCPUProfile(io.Discard); err == nil {
		defer pprof.StopCPUProfile()
	}
	var bad atomic.Int64
	var events atomic.Int64
	fail := func(format string, a ...any) {
		if bad.Add(1) < 10 {
			t.Errorf(format, a...)
		}
	}
	hook := func(f *Func, a *Args) {
		events.Add(1)
		switch f.Name {
		case pkg + "Small":
			if a.Word(2) != 5 || a.Word(0) == 0 {
				fail("Small: args %#x %#x", a.Word(0), a.Word(2))
			}
		case pkg + "Narrow":
			want := []uint64{0xFB, 65000, 0xFFFE7960, 1, uint64(math.Float32bits(1.5))}
			for i, w := range want {
				if a.Word(i) != w {
					fail("Narrow: arg %d %#x, want %#x", i, a.Word(i), w)
				}
			}
		case pkg + "Large":
			if a.Word(1) != 0 || a.Word(2) != math.Float64bits(2.5) {
				fail("Large: args %#x %#x", a.Word(1), a.Word(2))
			}
		case pkg + "Sum":
			if a.Word(1) != 8 || a.Word(3) != 3 {
				fail("Sum: len %d scale %d", a.Word(1), a.Word(3))
			}
		case pkg + "Deep":
			if a.Word(2) != 4 {
				fail("Deep: string length %d", a.Word(2))
			}
		}
		switch rand.Intn(8) {
		case 0:
			grow(50 + rand.Intn(100)) // move the stack while the function's frame is on it
		case 1:
			b := make([]byte, 512)
			sink.Store(&b)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var calls atomic.Int64
	worker := func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			work(i, fail)
			calls.Add(1)
		}
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go worker()
	}
	wg.Add(1)
	go func() { // never blocks, never allocates
		defer wg.Done()
		var arr [64]int
		for i := 0; !stop.Load(); i++ {
			if r := target.Small(&arr, "hello", i); r != i+5+3*i {
				fail("spinner: Small returned %d", r)
			}
		}
	}()
	ch := make(chan int)
	waited := make(chan int)
	wg.Add(1)
	go func() { // parked inside Wait while probes come and go
		defer wg.Done()
		for {
			r := target.Wait(ch, 2)
			if r < 0 {
				close(waited)
				return
			}
			waited <- r
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}()
	for c := 0; c < cycles; c++ {
		var on, off []Change
		for i, f := range fs {
			ch := Change{Func: f}
			if (c+i)%3 != 2 && os.Getenv("TORTURE_NOENTRY") == "" {
				ch.Entry = hook
			}
			ch.Return = (c+i)%2 == 0 && os.Getenv("TORTURE_NORET") == "" && f.ReturnErr() == nil
			on = append(on, ch)
			off = append(off, Change{Func: f})
		}
		if err := Set(on); err != nil {
			t.Fatal(err)
		}
		if c%10 == 0 {
			ch <- c
			if r := <-waited; r != c+2 {
				fail("Wait returned %d, want %d", r, c+2)
			}
		}
		runtime.Gosched()
		if err := Set(off); err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			f.ReadReturns(make([]Return, 64))
		}
	}
	stop.Store(true)
	ch <- -10
	<-waited
	wg.Wait()
	for _, f := range fs {
		drainAll(f) // the tests that run after (go test -cpu 1,2,8) count return events exactly
	}
	for _, f := range fs {
		if got := text(f.site, len(f.orig)); string(got) != string(f.orig) {
			t.Errorf("%s: entry % x after the last detach, want % x", f.Name, got, f.orig)
		}
		for _, r := range f.retSites {
			if got := text(uintptr(r.Addr), len(r.Orig)); string(got) != string(r.Orig) {
				t.Errorf("%s: return % x after the last detach, want % x", f.Name, got, r.Orig)
			}
		}
	}
	t.Logf("%d cycles, %d calls, %d entry events, %d wrong values", cycles, calls.Load(), events.Load(), bad.Load())
}

var sink atomic.Pointer[[]byte]

//go:noinline
func grow(n int) int {
	var buf [32]int
	buf[n%32] = n
	if n == 0 {
		return buf[0]
	}
	return grow(n-1) + buf[(n+1)%32]
}

// work calls every target once with values derived from i and checks each result.
func work(i int, fail func(string, ...any)) {
	var arr [64]int
	if r := target.Small(&arr, "hello", i); r != i+5+3*i || arr[0] != r {
		fail("Small returned %d", r)
	}
	x := i
	if p, r := target.Large(&x, false, 2.5); p != &x || r != 2 {
		fail("Large returned %p %d", p, r)
	}
	if r := target.Narrow(-5, 65000, -100000, true, 1.5); r != target.Leaf(-5+65000-100000, 1)+1 {
		fail("Narrow returned %d", r)
	}
	if r := target.Floats(1.5, 2, i%4); r != -0.5+float64(i%4)*3 {
		fail("Floats returned %v", r)
	}
	if got, err := target.Check(&target.Node{A: 3 * (i % 5), B: make([]int, i%5), C: "node"}); err != nil || got.C != "node" || got.A != 3*len(got.B) {
		fail("Check: %v", err)
	}
	s := []int{1, 2, 3, 4, 5, 6, 7, i}
	if r := target.Sum(s, 3); r != 3*(28+i) {
		fail("Sum returned %d", r)
	}
	acc := 0
	f := func(k int) int { acc += k; return acc + target.Leaf(k, 1) }
	if r := target.Apply(f, 5); r != 5+10 || acc != 5 {
		fail("Apply: %d, acc %d", r, acc)
	}
	if r := target.Apply(target.Adder(i), 3); r != 3+i+3*i+3 {
		fail("Adder: %d", r)
	}
	if r := target.Deep(20+i%40, "abcd"); r != 4 {
		fail("Deep returned %d", r)
	}
	func() {
		defer func() {
			if r := recover(); r != nil && r != target.ErrBad {
				panic(r)
			}
		}()
		if r := target.Panicky(i); r != 2*i {
			fail("Panicky returned %d", r)
		}
	}()
	for j := i % 4; j < len(target.Epis); j += 4 { // the epilogues of every shape
		if x := i%2001 - 1000; target.Epis[j](x) != target.EpiWant(j, x) {
			fail("Epi%02d(%d) returned %d", j, x, target.Epis[j](x))
		}
	}
	if runtime.GOARCH == "arm64" {
		if r := target.Huge(i); r != 2*i && r != 3*i {
			fail("Huge returned %d", r)
		}
	}
}

// tortureEpis is the functions of target.Epis whose epilogues are of the shapes the
// other targets lack (amd64: NOPs before the RET, SUBQ $-128, SP), or the first four
// (arm64), and Huge (arm64: a frame released through R27).
func tortureEpis(t *testing.T) []*Func {
	var fs []*Func
	for i := range target.Epis {
		f := lookup(t, fmt.Sprintf("Epi%02d", i))
		keep := runtime.GOARCH == "arm64" && i < 4
		for j := range f.retSites {
			if runtime.GOARCH == "amd64" && epilogueShape(f, j) != "ADDQ $imm8" && epilogueShape(f, j) != "ADDQ $imm32" {
				keep = true
			}
		}
		if keep && len(fs) < 6 {
			fs = append(fs, f)
		}
	}
	if runtime.GOARCH == "arm64" {
		fs = append(fs, lookup(t, "Huge"))
	}
	return fs
}
