// Command sdtdemo shows gosdt's probes in one process: it lists the sites discovery
// sealed, runs a workload with its probes disabled, enabled and disabled again, in
// rounds, and prints what each phase cost per call (the median of its rounds) and what
// the probes delivered. "sdtdemo
// workload" is the program sdtctl demo starts and traces.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/gosdt/gosdt/internal/hooks"
	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt"
)

var (
	reqStart = sdt.Define1[int]("demo", "start", "id")
	reqDone  = sdt.Define2[int, string]("demo", "done", "id", "status")
)

// handle is the workload: a little arithmetic with two probe sites.
//
//go:noinline
func handle(id int) int {
	sdt.Probe1(&reqStart, id)
	x := id
	for i := 0; i < 8; i++ {
		x = x*31 + i
	}
	status := "ok"
	if x%7 == 0 {
		status = "retry"
	}
	reqDone.Fire(id, status)
	return x
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "workload" {
		// sdtctl demo's traced child.
		if err := workload(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sdtdemo workload:", err)
			os.Exit(2)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sdtdemo:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sdtdemo", flag.ContinueOnError)
	calls := fs.Int("n", 20_000_000, "calls per phase")
	rounds := fs.Int("rounds", 3, "rounds of the three phases; each phase's figure is the median of its rounds")
	protocol := fs.String("protocol", "auto", "how sites are patched: auto, atomic or rendezvous")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 {
		return fmt.Errorf("-rounds %d: want at least 1", *rounds)
	}
	p, err := patch.ParseProtocol(*protocol)
	if err != nil {
		return err
	}
	hooks.SetPatchOptions(patch.Options{Protocol: p})

	infos, err := sdt.List("demo:::*")
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tSITE\tSTATE\tWHERE")
	for _, pi := range infos {
		for _, s := range pi.Sites {
			where := fmt.Sprintf("%s:%d", s.File, s.Line)
			if s.Reason != "" {
				where += " (" + s.Reason + ")"
			}
			fmt.Fprintf(tw, "%s\t%#x\t%s\t%s\n", pi, s.Addr, s.State, where)
		}
	}
	tw.Flush()

	var fires, retries atomic.Int64
	defer reqStart.Attach(func(int) { fires.Add(1) })()
	defer reqDone.Attach(func(_ int, status string) {
		fires.Add(1)
		if status == "retry" {
			retries.Add(1)
		}
	})()

	// Each phase's cost is the median of its rounds, the phases of a round run in turn:
	// the machine's drift (frequency, other load) falls on each alike, and the two
	// disabled figures say how far the comparison can be trusted.
	type result struct {
		ns     float64
		events int64
	}
	phase := func() result {
		fires.Store(0)
		start := time.Now()
		for i := range *calls {
			handle(i)
		}
		el := time.Since(start)
		return result{float64(el.Nanoseconds()) / float64(*calls), fires.Load()}
	}
	var got [3][]result // disabled, enabled, disabled again
	fmt.Fprintln(out)
	for r := range *rounds {
		got[0] = append(got[0], phase())
		start := time.Now()
		n, err := sdt.Enable("demo:::*")
		if err != nil {
			return err
		}
		if r == 0 {
			fmt.Fprintf(out, "enabled %d sites in %v\n", n, time.Since(start).Round(time.Microsecond))
		}
		got[1] = append(got[1], phase())
		if _, err := sdt.Disable("demo:::*"); err != nil {
			return err
		}
		got[2] = append(got[2], phase())
		fmt.Fprintf(out, "round %d: %.2f, %.2f, %.2f ns/call\n", r+1, got[0][r].ns, got[1][r].ns, got[2][r].ns)
	}
	fmt.Fprintf(out, "medians of %d rounds:\n", *rounds)
	for i, name := range []string{"disabled", "enabled", "disabled"} {
		rs := slices.Clone(got[i])
		slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.ns, b.ns) })
		m := rs[len(rs)/2]
		fmt.Fprintf(out, "%-9s %8.2f ns/call  %10d events\n", name, m.ns, m.events)
	}
	fmt.Fprintf(out, "retries seen while enabled: %d\n", retries.Load())
	return nil
}
