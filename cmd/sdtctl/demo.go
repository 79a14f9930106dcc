package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os/exec"
	"slices"
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
	phase := o.fs.Duration("t", time.Second, fmt.Sprintf("length of each measured `PHASE` (at least %v)", minPhase))
	rounds := o.fs.Int("rounds", 3, "measure each state `N` times, the order alternated, and report medians")
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
	if *rounds < 1 || *rounds > 100 {
		return fail(exitUsage, "demo: -rounds %d: want 1 to 100", *rounds)
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
	// false: fewer than two counts came.
	measure := func() (float64, bool) {
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
				return r, true
			}
			if waited > late {
				return 0, false
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
	quiet := func(args ...string) error { return run(args, io.Discard, stderr) }

	fmt.Fprintf(stdout, "started the demo workload, pid %d\n", pid)
	time.Sleep(300 * time.Millisecond)
	if err := step("list", "-p", p, "demo:::"); err != nil {
		return err
	}
	if err := step("trace", "-p", p, "demo:::request", "-c", "5"); err != nil {
		return err
	}
	if err := step("stat", "-p", p, "demo:::request", "--hist", "arg0", "-i", "1s", "-d", "2100ms"); err != nil {
		return err
	}

	// The throughput of each state: the states measured in rounds, each round in the
	// other order than the last, so that the machine's drift (frequency, other load,
	// the workload's warm-up) falls on every state alike; each figure is the median of
	// its phases. "disabled" and "disabled again" are the first and last phase of each
	// round: two figures of one state, whose agreement says how far the others can
	// be trusted.
	const (
		off = iota
		on
		agg
		offAgain
		nstates
	)
	var got [nstates][]float64
	state := func(st int) error {
		switch st {
		case off, offAgain:
			r, ok := measure()
			if ok {
				got[st] = append(got[st], r)
			}
		case on:
			if err := quiet("enable", "-p", p, "demo:::request"); err != nil {
				return err
			}
			r, ok := measure()
			if ok {
				got[st] = append(got[st], r)
			}
			return quiet("disable", "-p", p, "demo:::request")
		case agg:
			stop := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- cmdStat([]string{"-p", p, "demo:::request", "--by", "arg1", "-i", "10s"}, io.Discard, stderr, stop)
			}()
			time.Sleep(200 * time.Millisecond)
			r, ok := measure()
			close(stop)
			if err := <-done; err != nil {
				return err
			}
			if ok {
				got[st] = append(got[st], r)
			}
		}
		return nil
	}
	say(fmt.Sprintf("enable / stat --by arg1 / disable -p %s demo:::request   (measuring: %d rounds of %v phases, the order alternated)", p, *rounds, *phase))
	for i := range *rounds {
		order := []int{off, on, agg, offAgain}
		if i%2 == 1 {
			order = []int{off, agg, on, offAgain}
		}
		for _, st := range order {
			if err := state(st); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "round %d of %d measured\n", i+1, *rounds)
	}
	figure := func(st int) string {
		if len(got[st]) == 0 {
			return "not measured (the workload reported fewer than two counts a phase: a busy machine? try a longer -t)"
		}
		m := median(got[st])
		return fmt.Sprintf("%12.0f  (median of %d; %s)", m, len(got[st]), spread(got[st], m))
	}
	fmt.Fprintf(stdout, "\nworkload throughput (calls/s, one call = one demo:::request site, %d workers):\n", 2)
	fmt.Fprintf(stdout, "  probes disabled          %s\n", figure(off))
	fmt.Fprintf(stdout, "  enabled, no consumer     %s\n", figure(on))
	fmt.Fprintf(stdout, "  enabled, aggregation     %s\n", figure(agg))
	fmt.Fprintf(stdout, "  disabled again           %s\n", figure(offAgain))
	if len(got[off]) > 0 && len(got[offAgain]) > 0 {
		a, b := median(got[off]), median(got[offAgain])
		if d := math.Abs(a-b) / max(a, b); d > 0.1 {
			fmt.Fprintf(stdout, "the two disabled figures differ by %.0f%%: the machine was busy or its speed changed; the comparison is not to be trusted (a longer -t or more -rounds may help)\n", 100*d)
		}
	}
	return nil
}

// median is the middle of xs (the mean of the two middle ones for an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread says how far xs range from their median m.
func spread(xs []float64, m float64) string {
	if len(xs) < 2 || m == 0 {
		return "one phase"
	}
	return fmt.Sprintf("range %+.0f%% to %+.0f%%", 100*(slices.Min(xs)-m)/m, 100*(slices.Max(xs)-m)/m)
}
