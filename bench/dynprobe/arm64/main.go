package main

import (
	"debug/elf"
	"fmt"
	"io"
	"math/rand"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

type slotCfg struct {
	n    int64 // frame size
	ctxt uintptr
	id   uintptr
	offs [16]int64 // R0..R15 -> offset from argp, -1 = none
}

var cfgs [4]slotCfg

func stub0()
func stub1()
func stub2()
func stub3()
func stubCommon()
func stubBody()
func stubAddrs() (a, b, c, d uintptr)

var (
	hits      [4]atomic.Int64
	grows     atomic.Int64
	panicNow  atomic.Bool
	panicked  atomic.Int64
	sinkB     []byte
	printed   atomic.Bool
	badMode   = os.Getenv("BAD") == "1"
	noHandler = os.Getenv("NOHANDLERWORK") == "1"
)

// probeHandler is an ordinary Go function: it may grow the stack, allocate,
// trigger GC, panic, take tracebacks.
func probeHandler(id uintptr, argp unsafe.Pointer, ctxt unsafe.Pointer) unsafe.Pointer {
	hits[id].Add(1)
	if noHandler {
		return ctxt
	}
	if printed.CompareAndSwap(false, true) {
		pcs := make([]uintptr, 16)
		n := runtime.Callers(0, pcs)
		fr := runtime.CallersFrames(pcs[:n])
		var b strings.Builder
		for {
			f, more := fr.Next()
			fmt.Fprintf(&b, "   %s %s:%d\n", f.Function, f.File[strings.LastIndex(f.File, "/")+1:], f.Line)
			if !more {
				break
			}
		}
		fmt.Print("runtime.Callers inside the handler:\n", b.String())
		if os.Getenv("STACK") == "1" {
			fmt.Printf("debug.Stack inside the handler:\n%s\n", debug.Stack())
		}
	}
	r := rand.Intn(8)
	if r < 3 {
		grows.Add(1)
		growStack(50 + rand.Intn(150)) // forces copystack with stub + probed frame on the stack
	}
	if r == 4 {
		sinkB = make([]byte, 1<<10)
	}
	if id == 0 && panicNow.Load() && rand.Intn(50) == 0 {
		panic("handler panic")
	}
	return ctxt
}

//go:noinline
func growStack(n int) int {
	var buf [32]int
	buf[n%32] = n
	if n == 0 {
		return buf[0]
	}
	return growStack(n-1) + buf[(n+1)%32]
}

// ---- targets ----

//go:noinline
func helper(x int) int { return x * 2 }

//go:noinline
func target1(p *[64]int, s string, n int) int {
	p[0] = n + len(s) + helper(n)
	return p[0]
}

type node struct {
	a int
	b []int
	c string
}

//go:noinline
func target2(x *node) *node {
	if x.a != len(x.b)*3 || x.c != "node" {
		panic(fmt.Sprintf("target2 saw corrupted node %d %d %q", x.a, len(x.b), x.c))
	}
	helper(x.a)
	return x
}

//go:noinline
func targetLarge(p *[64]int, n int) int {
	var buf [64]int
	buf[helper(n)%64] = n
	p[1] = buf[(2*n)%64] + n
	return p[1]
}

//go:noinline
func callit(f func(int) int, k int) int { return f(k) }

// ---- patching ----

func mprotect(addr uintptr, n int, prot int) {
	page := addr &^ 4095
	end := (addr + uintptr(n) + 4095) &^ 4095
	if err := syscall.Mprotect(unsafe.Slice((*byte)(unsafe.Pointer(page)), end-page), prot); err != nil {
		panic(err)
	}
}

func mem(a uintptr, n int) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(a)), n) }

func insn(a uintptr) uint32 {
	b := mem(a, 4)
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func sext(v uint32, bits uint) int64 { return int64(int32(v<<(32-bits)) >> (32 - bits)) }

var spillOffs [4][16]int64

func attach(slot int, fn uintptr, stub uintptr) {
	cfg := &cfgs[slot]
	cfg.id = uintptr(slot)
	for i := range cfg.offs {
		cfg.offs[i] = -1
	}
	// prologue: MOVD 16(R28),R16; [SUB $x,RSP,R17;] CMP; BLS ms; (MOVD.W R30,-N(RSP) | SUB $N,RSP,R20; STP; MOVD R20,RSP); MOVD R29,-8(RSP)?; SUB $8,RSP,R29
	var e uintptr
	var ms uintptr
	for i := uintptr(0); i < 16*4; i += 4 {
		w := insn(fn + i)
		switch {
		case w&0xff00001f == 0x54000009: // B.LS
			ms = fn + i + uintptr(sext((w>>5)&0x7ffff, 19)*4)
		case w&0xffe00fff == 0xf8000ffe: // STR X30, [SP, #-N]!
			cfg.n = -sext((w>>12)&0x1ff, 9)
		case w&0xff8003ff == 0xd10003f4: // SUB $N, RSP, R20
			cfg.n = int64((w>>10)&0xfff) << (12 * ((w >> 22) & 1))
		case w == 0xd10023fd: // SUB $8, RSP, R29
			e = fn + i
		}
		if e != 0 {
			break
		}
	}
	if e == 0 || ms == 0 || cfg.n == 0 {
		panic(fmt.Sprintf("prologue not understood: e=%x ms=%x n=%d", e, ms, cfg.n))
	}
	// morestack block: STP/STR of arg registers at disp(RSP), MOVD R30, R3, BL morestack*
	for p := ms; ; p += 4 {
		w := insn(p)
		switch {
		case w&0xffc003e0 == 0xa90003e0: // STP Xt1, Xt2, [SP, #imm7*8]
			off := sext((w>>15)&0x7f, 7) * 8
			cfg.offs[w&0x1f] = off - 8
			cfg.offs[(w>>10)&0x1f] = off
			continue
		case w&0xffc003e0 == 0xf90003e0: // STR Xt, [SP, #imm12*8]
			cfg.offs[w&0x1f] = int64((w>>10)&0xfff)*8 - 8
			continue
		case w == 0xaa1e03e3: // MOVD R30, R3
			continue
		case w&0xfc000000 == 0x94000000: // BL
			tgt := p + uintptr(sext(w&0x3ffffff, 26)*4)
			switch name := runtime.FuncForPC(tgt).Name(); name {
			case "runtime.morestack":
				cfg.ctxt = 1
			case "runtime.morestack_noctxt":
			default:
				panic("unexpected call " + name)
			}
		default:
			panic(fmt.Sprintf("unsupported spill instruction %08x", w))
		}
		break
	}
	spillOffs[slot] = cfg.offs
	if badMode || os.Getenv("BADARGS") == "1" {
		for i := range cfg.offs {
			cfg.offs[i] = -1
		}
	}
	if badMode || os.Getenv("BADCTXT") == "1" {
		cfg.ctxt = 0
	}
	bl := uint32(0x94000000) | uint32((int64(stub)-int64(e))/4)&0x3ffffff
	fmt.Printf("attach %-22s site +%#x %08x -> BL %08x | N=%d ctxt=%d offs=%v\n", runtime.FuncForPC(fn).Name(), e-fn, insn(e), bl, cfg.n, cfg.ctxt, cfg.offs[:4])
	mprotect(e, 4, syscall.PROT_READ|syscall.PROT_WRITE|syscall.PROT_EXEC)
	copy(mem(e, 4), []byte{byte(bl), byte(bl >> 8), byte(bl >> 16), byte(bl >> 24)})
	mprotect(e, 4, syscall.PROT_READ|syscall.PROT_EXEC)
}

func funcPC(f any) uintptr {
	// the funcval's code pointer: the ABIInternal entry
	return reflect.ValueOf(f).Pointer()
}

var errs, moved atomic.Int64

func report(format string, a ...any) {
	if errs.Add(1) < 20 {
		fmt.Printf("ERROR: "+format+"\n", a...)
	}
}

//go:noinline
func recurse(d int, f func()) {
	var pad [16]int
	pad[d%16] = d
	if d > 0 {
		recurse(d-1, f)
		return
	}
	f()
}

func worker(w int, stop *atomic.Bool, wg *sync.WaitGroup) {
	defer wg.Done()
	str := "hello"
	for it := 0; !stop.Load(); it++ {
		recurse(rand.Intn(40), func() {
			// target1: stack pointer argument; probe handler moves the stack
			var arr [64]int
			n := it + w
			func() {
				defer func() {
					if r := recover(); r != nil {
						panicked.Add(1)
						arr[0] = n + len(str) + helper(n) // the call did not happen
					}
				}()
				before := uintptr(unsafe.Pointer(&arr))
				got := target1(&arr, str, n)
				if uintptr(unsafe.Pointer(&arr)) != before {
					moved.Add(1)
				}
				if got != n+len(str)+2*n {
					report("target1 returned %d", got)
				}
			}()
			if arr[0] != n+len(str)+2*n {
				report("target1 wrote through a stale pointer: arr[0]=%d want %d", arr[0], n+len(str)+2*n)
			}
			// target2: the only reference to a fresh heap object is in a register
			x := target2(&node{a: 3 * (it % 7), b: make([]int, it%7), c: "node"})
			if x.c != "node" || x.a != 3*len(x.b) {
				report("target2 result corrupted")
			}
			// closure with a stack-allocated context (DX) capturing a stack variable
			acc := 0
			f := func(k int) int { acc += k; return acc + helper(k) }
			if got := callit(f, 5); got != 5+10 || acc != 5 {
				report("closure: got %d acc %d", got, acc)
			}
			// large frame function
			var arr2 [64]int
			if got := targetLarge(&arr2, n); got != arr2[1] {
				report("targetLarge %d %d", got, arr2[1])
			}
		})
	}
}

func main() {
	a0, a1, a2, a3 := stubAddrs()
	closureCode := symAddr("main.worker.func1.2")
	attach(0, funcPC(target1), a0)
	attach(1, funcPC(target2), a1)
	attach(2, closureCode, a2)
	attach(3, funcPC(targetLarge), a3)
	debug.SetGCPercent(10)
	if os.Getenv("PROF") != "0" {
		pprof.StartCPUProfile(io.Discard)
		defer pprof.StopCPUProfile()
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go worker(w, &stop, &wg)
	}
	wg.Add(1)
	var gcs int
	go func() {
		defer wg.Done()
		for !stop.Load() {
			runtime.GC()
			gcs++
			time.Sleep(200 * time.Microsecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	panicNow.Store(true)
	dur := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("DUR")); err == nil {
		dur = d
	}
	time.Sleep(dur)
	stop.Store(true)
	wg.Wait()
	fmt.Printf("hits target1=%d target2=%d closure=%d large=%d; handler stack growths=%d panics through stub=%d; runtime.GC calls=%d numGC=%d errors=%d\n",
		hits[0].Load(), hits[1].Load(), hits[2].Load(), hits[3].Load(), grows.Load(), panicked.Load(), gcs, numGC(), errs.Load())
	fmt.Printf("stack moved while target1's probe handler ran: %d times\n", moved.Load())
}

func numGC() uint32 { var m runtime.MemStats; runtime.ReadMemStats(&m); return m.NumGC }

func symAddr(name string) uintptr { a, _ := symAddrSize(name); return a }

func symAddrSize(name string) (uintptr, uint64) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		panic(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return uintptr(s.Value), s.Size
		}
	}
	panic("no symbol " + name)
}
