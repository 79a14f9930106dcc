package main

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// minPhase is the shortest phase demo measures: it takes the workload's count at
// least twice within the phase, at a quarter of it apart.
const minPhase = 100 * time.Millisecond

// sample is the workload's count of calls at a time.
type sample struct {
	calls uint64
	ns    int64
}

// rate is the calls per second between the first and the last sample, false with
// fewer than two.
func rate(s []sample) (float64, bool) {
	if len(s) < 2 || s[len(s)-1].ns <= s[0].ns {
		return 0, false
	}
	a, b := s[0], s[len(s)-1]
	return float64(b.calls-a.calls) / (float64(b.ns-a.ns) / 1e9), true
}

// cmdDemo starts the workload in a child process and drives it with sdtctl's own
// commands.
func cmdDemo(args []string, stdout, stderr io.Writer) error {
	o := newOpts("demo") // no --json: the demo is for people to watch
	phase := o.fs.Duration("t", 2*time.Second, fmt.Sprintf("length of each measured `PHASE` (at least %v)", minPhase))
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fail(exitUsage, "demo: unexpected %q", pos[0])
	}
	if *phase < minPhase {
		return fail(exitUsage, "demo: -t %v: want a phase of at least %v", *phase, minPhase)
	}
	bin, err := demoWorkloadBinary(stderr)
	if err != nil {
		return err
	}
	// The workload counts four times a phase (at most every 250 ms): a phase's rate is
	// taken between the counts inside it.
	child := exec.Command(bin, "workload", "-i", min(*phase/4, 250*time.Millisecond).String())
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
	var samples []sample
	go func() {
		for sc.Scan() {
			var x sample
			if _, err := fmt.Sscanf(sc.Text(), "calls %d %d", &x.calls, &x.ns); err == nil {
				mu.Lock()
				samples = append(samples, x)
				mu.Unlock()
			}
		}
	}()
	// measure is the workload's throughput over a phase from now: between the first
	// count taken in it and the last. A workload that reports late (a busy machine)
	// makes the phase longer, up to ten times: the rate is of the counts' own times.
	measure := func() string {
		mu.Lock()
		from := len(samples)
		mu.Unlock()
		time.Sleep(*phase)
		late := 9 * *phase
		for waited := time.Duration(0); ; waited += 10 * time.Millisecond {
			mu.Lock()
			r, ok := rate(samples[from:])
			mu.Unlock()
			if ok {
				return fmt.Sprintf("%12.0f", r)
			}
			if waited > late {
				return "not measured (the workload reported fewer than two counts: a busy machine? try a longer -t)"
			}
			time.Sleep(10 * time.Millisecond)
		}
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
	var stat string
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
	fmt.Fprintf(stdout, "  probes disabled          %s\n", off)
	fmt.Fprintf(stdout, "  enabled, no consumer     %s\n", on)
	fmt.Fprintf(stdout, "  enabled, aggregation     %s\n", stat)
	fmt.Fprintf(stdout, "  disabled again           %s\n", again)
	return nil
}
