package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

// The workload sdtctl demo traces: sdtdemo workload. It lives here, in a program that
// uses gosdt, so that sdtctl itself links no probe and runs no discovery.

var (
	demoReq  = sdt.Define2[int, string]("demo", "request", "latency_us", "path")
	demoDone = sdt.Define1[int]("demo", "done", "worker")
)

var demoPaths = []string{"/", "/api/users", "/api/orders", "/static/app.js"}

// serveDemo is the workload's unit of work: a little arithmetic and two probe sites.
//
//go:noinline
func serveDemo(worker, i int) int {
	x := i
	for k := 0; k < 16; k++ {
		x = x*31 + k
	}
	lat := (x & 0x3ff) + (x>>10)&0xff
	sdt.Probe2(&demoReq, lat, demoPaths[i&3])
	if i&1023 == 0 {
		demoDone.Fire(worker)
	}
	return x
}

// workload runs the workload on its worker goroutines and prints, every interval,
// "calls <calls so far> <nanoseconds since it started>" on stdout, until stdin closes.
func workload(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sdtdemo workload", flag.ContinueOnError)
	workers := fs.Int("w", 2, "worker goroutines")
	iv := fs.Duration("i", 250*time.Millisecond, "report interval")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var calls atomic.Uint64
	var sink atomic.Int64
	for w := range *workers {
		go func() {
			n := 0
			for i := 0; ; i++ {
				n += serveDemo(w, i)
				if i&255 == 0 {
					calls.Add(256)
				}
				if i&(1<<20-1) == 0 {
					sink.Add(int64(n))
				}
			}
		}()
	}
	fmt.Fprintf(stdout, "ready %d\n", os.Getpid())
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	t0 := time.Now()
	for range time.Tick(*iv) {
		fmt.Fprintf(stdout, "calls %d %d\n", calls.Load(), time.Since(t0).Nanoseconds())
	}
	return nil
}
