package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

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

// demoWorkload runs the workload on GOMAXPROCS goroutines and prints, every interval,
// "rate <calls per second>" on stdout, until stdin closes.
func demoWorkload(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("demo-workload", flag.ContinueOnError)
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
	last, t0 := calls.Load(), time.Now()
	for range time.Tick(*iv) {
		n, t := calls.Load(), time.Now()
		fmt.Fprintf(stdout, "rate %.0f\n", float64(n-last)/t.Sub(t0).Seconds())
		last, t0 = n, t
	}
	return nil
}

// cmdDemo starts the workload in a child process and drives it with sdtctl's own
// commands.
func cmdDemo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	phase := fs.Duration("t", 2*time.Second, "length of each measured phase")
	if err := fs.Parse(args); err != nil {
		return fail(exitUsage, "%v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(self, "demo-workload")
	child.Stderr = stderr
	in, _ := child.StdinPipe()
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		return err
	}
	defer child.Wait()
	defer in.Close()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready ") {
		return fail(exitError, "demo workload did not start")
	}
	pid := child.Process.Pid
	var mu sync.Mutex
	var rates []float64
	go func() {
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "rate "); ok {
				r, _ := strconv.ParseFloat(v, 64)
				mu.Lock()
				rates = append(rates, r)
				mu.Unlock()
			}
		}
	}()
	measure := func() float64 {
		mu.Lock()
		rates = nil
		mu.Unlock()
		time.Sleep(*phase)
		mu.Lock()
		defer mu.Unlock()
		if len(rates) < 2 {
			return 0
		}
		s := 0.0
		for _, r := range rates[1:] { // the first interval straddles the switch
			s += r
		}
		return s / float64(len(rates)-1)
	}
	p := strconv.Itoa(pid)
	say := func(cmd string) { fmt.Fprintf(stdout, "\n$ sdtctl %s\n", cmd) }
	step := func(args ...string) error {
		say(strings.Join(args, " "))
		return run(args, stdout, stderr)
	}

	fmt.Fprintf(stdout, "started the demo workload, pid %d\n", pid)
	time.Sleep(300 * time.Millisecond)
	if err := step("list", "-p", p, "demo:::"); err != nil {
		return err
	}
	off := measure()
	if err := step("trace", "-p", p, "demo:::request", "-c", "5"); err != nil {
		return err
	}
	if err := step("stat", "-p", p, "demo:::request", "--hist", "arg0", "-i", "1s", "-d", "2100ms"); err != nil {
		return err
	}
	if err := step("enable", "-p", p, "demo:::request"); err != nil {
		return err
	}
	on := measure()
	var stat float64
	say("stat -p " + p + " demo:::request --by arg1   (measuring throughput with an aggregation attached)")
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- cmdStat([]string{"-p", p, "demo:::request", "--by", "arg1", "-i", "10s"}, stdout, stderr, stop)
	}()
	time.Sleep(200 * time.Millisecond)
	stat = measure()
	close(stop)
	if err := <-done; err != nil {
		return err
	}
	if err := step("disable", "-p", p, "demo:::request"); err != nil {
		return err
	}
	again := measure()
	fmt.Fprintf(stdout, "\nworkload throughput (calls/s, one call = one demo:::request site, %d workers):\n", 2)
	fmt.Fprintf(stdout, "  probes disabled          %12.0f\n", off)
	fmt.Fprintf(stdout, "  enabled, no consumer     %12.0f\n", on)
	fmt.Fprintf(stdout, "  enabled, aggregation     %12.0f\n", stat)
	fmt.Fprintf(stdout, "  disabled again           %12.0f\n", again)
	return nil
}
