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
	morestack uintptr
	ctxt      uintptr
	offs      [9]int64 // AX BX CX DI SI R8 R9 R10 R11 -> offset from argp, -1 = none
	leaqDisp  int64    // 0: small frame; else LEAQ displacement to emulate
	id        uintptr
}

var cfgs [4]slotCfg

func stub0()
func stub1()
func stub2()
func stub3()
func stubCommon()
func stubBody()
func stubAddrs() (a, b, c, d uintptr)

type retCfg struct {
	n    int64
	skip int64
	mask uintptr
	id   uintptr
	offs [9]int64
}

var rcfgs [4]retCfg
var spillOffs [4][9]int64
var rhits [4]atomic.Int64

func ret0()
func ret1()
func ret2()
func ret3()
func retCommon()
func retBody()
func retAddrs() (a, b, c, d uintptr)

// retHandler: results whose register holds a pointer come in (and go back out)
// as unsafe.Pointer, so the GC keeps them alive and copystack adjusts them.
func retHandler(id uintptr, p0, p1 unsafe.Pointer, i0, i1 uintptr) (unsafe.Pointer, unsafe.Pointer) {
	rhits[id].Add(1)
	if noHandler {
		return p0, p1
	}
	if rand.Intn(8) < 3 {
		growStack(50 + rand.Intn(150))
	}
	if rand.Intn(4) == 0 {
		sinkB = make([]byte, 1<<10)
	}
	return p0, p1
}

// attachRet patches every epilogue ADDQ $N,SP; POPQ BP (; RET) of fn.
func attachRet(slot int, name string, mask uintptr, stub uintptr) {
	fn, size := symAddrSize(name)
	code := mem(fn, int(size))
	rc := &rcfgs[slot]
	rc.id = uintptr(slot)
	rc.mask = mask
	if os.Getenv("BADRES") == "1" {
		rc.mask = 0
	}
	rc.offs = spillOffs[slot]
	var sites []uintptr
	for i := 0; i+6 <= len(code); i++ {
		if code[i] == 0x48 && code[i+1] == 0x83 && code[i+2] == 0xc4 && code[i+4] == 0x5d && code[i+5] == 0xc3 {
			rc.n, rc.skip = int64(code[i+3]), 0
			sites = append(sites, fn+uintptr(i))
		}
		if i+9 <= len(code) && code[i] == 0x48 && code[i+1] == 0x81 && code[i+2] == 0xc4 && code[i+7] == 0x5d && code[i+8] == 0xc3 {
			rc.n = int64(int32(uint32(code[i+3]) | uint32(code[i+4])<<8 | uint32(code[i+5])<<16 | uint32(code[i+6])<<24))
			rc.skip = 3
			sites = append(sites, fn+uintptr(i))
		}
	}
	for _, e := range sites {
		rel := int64(stub) - int64(e+5)
		p := []byte{0xe8, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
		p = append(p, nops[int(rc.skip)]...)
		fmt.Printf("attachRet %-20s site +%#x % x -> % x (N=%d mask=%b)\n", name, e-fn, mem(e, len(p)+1), p, rc.n, rc.mask)
		mprotect(e, len(p), syscall.PROT_READ|syscall.PROT_WRITE|syscall.PROT_EXEC)
		copy(mem(e, len(p)), p)
		mprotect(e, len(p), syscall.PROT_READ|syscall.PROT_EXEC)
	}
}

//go:noinline
func target4(p *[64]int, n int) *[64]int {
	p[2] = helper(n)
	return p
}

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

var nops = map[int][]byte{0: {}, 1: {0x90}, 2: {0x66, 0x90}, 3: {0x0f, 0x1f, 0x00}, 4: {0x0f, 0x1f, 0x40, 0x00}, 5: {0x0f, 0x1f, 0x44, 0x00, 0x00}}

func mem(a uintptr, n int) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(a)), n) }

// attach decodes f's prologue and morestack block and patches its entry.
func attach(slot int, fn uintptr, stub uintptr) {
	b := mem(fn, 32)
	cfg := &cfgs[slot]
	cfg.id = uintptr(slot)
	var patchLen int
	var jls int
	switch {
	case b[0] == 0x49 && b[1] == 0x3b && b[2] == 0x66 && b[3] == 0x10: // CMPQ SP, 16(R14)
		jls = 4
		cfg.leaqDisp = 0
	case b[0] == 0x4c && b[1] == 0x8d && b[2] == 0x64 && b[3] == 0x24: // LEAQ disp8(SP), R12
		cfg.leaqDisp = int64(int8(b[4]))
		if b[5] != 0x4d || b[6] != 0x3b || b[7] != 0x66 || b[8] != 0x10 {
			panic("unexpected")
		}
		jls = 9
		patchLen = 5
	case b[0] == 0x4c && b[1] == 0x8d && b[2] == 0xa4 && b[3] == 0x24: // LEAQ disp32(SP), R12
		cfg.leaqDisp = int64(int32(uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24))
		if b[8] != 0x4d || b[9] != 0x3b || b[10] != 0x66 || b[11] != 0x10 {
			panic("unexpected")
		}
		jls = 12
		patchLen = 8
	default:
		panic(fmt.Sprintf("unknown prologue % x", b[:16]))
	}
	var jlsLen int
	var ms uintptr
	switch {
	case b[jls] == 0x76:
		jlsLen = 2
		ms = fn + uintptr(jls+2) + uintptr(int64(int8(b[jls+1])))
	case b[jls] == 0x0f && b[jls+1] == 0x86:
		jlsLen = 6
		ms = fn + uintptr(jls+6) + uintptr(int64(int32(uint32(b[jls+2])|uint32(b[jls+3])<<8|uint32(b[jls+4])<<16|uint32(b[jls+5])<<24)))
	default:
		panic("no JLS")
	}
	if cfg.leaqDisp == 0 {
		patchLen = jls + jlsLen // CMPQ + JLS replaced
	}
	cfg.morestack = ms
	// decode the morestack block's spills
	for i := range cfg.offs {
		cfg.offs[i] = -1
	}
	regIdx := map[int]int{0: 0, 3: 1, 1: 2, 7: 3, 6: 4, 8: 5, 9: 6, 10: 7, 11: 8}
	m := mem(ms, 128)
	i := 0
	for {
		switch {
		case (m[i] == 0x48 || m[i] == 0x4c) && m[i+1] == 0x89 && m[i+2]&0xc7 == 0x44 && m[i+3] == 0x24:
			reg := int(m[i+2]>>3) & 7
			if m[i] == 0x4c {
				reg += 8
			}
			idx, ok := regIdx[reg]
			if !ok {
				panic("bad reg")
			}
			cfg.offs[idx] = int64(m[i+4]) - 8
			i += 5
			continue
		case m[i] == 0x0f && m[i+1] == 0x1f && m[i+2] == 0x40:
			i += 4
			continue
		case m[i] == 0x0f && m[i+1] == 0x1f && m[i+2] == 0x44:
			i += 5
			continue
		case m[i] == 0x66 && m[i+1] == 0x0f && m[i+2] == 0x1f && m[i+3] == 0x44:
			i += 6
			continue
		case m[i] == 0x90:
			i++
			continue
		case m[i] == 0xe8:
			tgt := ms + uintptr(i+5) + uintptr(int64(int32(uint32(m[i+1])|uint32(m[i+2])<<8|uint32(m[i+3])<<16|uint32(m[i+4])<<24)))
			name := runtime.FuncForPC(tgt).Name()
			switch name {
			case "runtime.morestack":
				cfg.ctxt = 1
			case "runtime.morestack_noctxt":
				cfg.ctxt = 0
			default:
				panic("unexpected call " + name)
			}
		default:
			panic(fmt.Sprintf("unsupported spill instruction % x", m[i:i+8]))
		}
		break
	}
	spillOffs[slot] = cfg.offs
	if badMode || os.Getenv("BADARGS") == "1" { // negative control: keep arg registers only in the stub's untyped frame
		for i := range cfg.offs {
			cfg.offs[i] = -1
		}
	}
	if badMode || os.Getenv("BADCTXT") == "1" {
		cfg.ctxt = 0
	}
	rel := int64(stub) - int64(fn+5)
	p := []byte{0xe8, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
	p = append(p, nops[patchLen-5]...)
	fmt.Printf("attach %-22s prologue % x | patch % x | leaq=%d morestack=+%#x ctxt=%d offs=%v\n",
		runtime.FuncForPC(fn).Name(), b[:patchLen], p, cfg.leaqDisp, ms-fn, cfg.ctxt, cfg.offs)
	mprotect(fn, len(p), syscall.PROT_READ|syscall.PROT_WRITE|syscall.PROT_EXEC)
	copy(mem(fn, len(p)), p)
	mprotect(fn, len(p), syscall.PROT_READ|syscall.PROT_EXEC)
}

func funcPC(f any) uintptr {
	// the funcval's code pointer: the ABIInternal entry
	return reflect.ValueOf(f).Pointer()
}

var errs, moved atomic.Int64
var stubGrow int64 // incremented by the stub when the probed function needs more stack

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
			// stack pointer result
			var arr3 [64]int
			if q := target4(&arr3, n); q != &arr3 || arr3[2] != 2*n {
				report("target4 returned a stale stack pointer")
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
	if os.Getenv("BENCH") == "1" {
		bench := func() time.Duration {
			var arr [64]int
			t := time.Now()
			for i := 0; i < 5_000_000; i++ {
				target1(&arr, "hi", i)
			}
			return time.Since(t) / 5_000_000
		}
		bench()
		b0 := min(bench(), bench(), bench())
		attach(0, funcPC(target1), a0)
		bench()
		b1 := min(bench(), bench(), bench())
		fmt.Printf("target1 per call: unpatched %v, with entry probe (handler only counts) %v\n", b0, b1)
		if os.Getenv("RET") == "1" {
			r0, _, _, _ := retAddrs()
			attachRet(0, "main.target1", 0, r0)
			bench()
			b2 := min(bench(), bench(), bench())
			fmt.Printf("target1 per call with entry+return probes %v\n", b2)
		}
		return
	}
	closureCode := symAddr("main.worker.func1.2")
	attach(0, funcPC(target1), a0)
	attach(1, funcPC(target2), a1)
	attach(2, closureCode, a2)
	attach(3, funcPC(targetLarge), a3)
	if os.Getenv("RET") == "1" {
		r0, r1, r2, r3 := retAddrs()
		attachRet(0, "main.target1", 0, r0)
		attachRet(1, "main.target2", 1, r1)
		attachRet(3, "main.targetLarge", 0, r3)
		spillOffs[2] = [9]int64{-1, -1, -1, -1, -1, -1, -1, -1, -1}
		spillOffs[2][0], spillOffs[2][1] = 0, 8 // target4(p, n): as decoded by attach for target1-like signatures
		attachRet(2, "main.target4", 1, r2)
	}

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
	fmt.Printf("return probes: target1=%d target2=%d target4=%d large=%d\n", rhits[0].Load(), rhits[1].Load(), rhits[2].Load(), rhits[3].Load())
	fmt.Printf("stub found the stack check failing and entered the function's own morestack block: %d times\n", atomic.LoadInt64(&stubGrow))
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
