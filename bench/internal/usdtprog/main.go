//go:build linux

// Command usdtprog is what BenchmarkBpftraceHit seals and traces with bpftrace:
// "usdtprog N ADDR" waits until a tracer has enabled bench:hit (its USDT semaphore),
// fires it N times with an integer and a string on one thread, and prints the CPU time
// of that thread per fire (user and system: the kernel's uprobe handling is the
// thread's system time; unlike wall time it leaves out the time other processes of a
// loaded machine took the CPU), the wall time per fire, and the 5 bytes of its own text at ADDR (the note's address, hex) after the loop:
// the kernel's CALL (e8) where it took its fast uprobe path there, an INT3 (cc) where
// every hit traps.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

var hit = sdt.Define2[int, string]("bench", "hit", "i", "what")

//go:noinline
func fire(n int) {
	for i := range n {
		sdt.Probe2(&hit, i, "hit")
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: usdtprog N ADDR")
		os.Exit(2)
	}
	n, err1 := strconv.Atoi(os.Args[1])
	addr, err2 := strconv.ParseUint(os.Args[2], 16, 64)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "usdtprog: bad arguments", err1, err2)
		os.Exit(2)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !hit.Enabled() {
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "usdtprog: bench:hit was never enabled")
			os.Exit(1)
		}
		time.Sleep(5 * time.Millisecond)
	}
	runtime.LockOSThread()
	fire(1) // the first hit traps; the kernel optimizes after it
	cpu0, start := threadCPU(), time.Now()
	fire(n)
	elapsed, cpu := time.Since(start), threadCPU()-cpu0
	text := make([]byte, 5)
	mem, err := os.Open("/proc/self/mem")
	if err == nil {
		_, err = mem.ReadAt(text, int64(addr))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "usdtprog: reading its text:", err)
		os.Exit(1)
	}
	fmt.Printf("cpu-ns/fire=%.1f ns/fire=%.1f text=%x\n", float64(cpu.Nanoseconds())/float64(n), float64(elapsed.Nanoseconds())/float64(n), text)
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		fmt.Fprintln(os.Stderr, "usdtprog: getrusage:", err)
		os.Exit(1)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
