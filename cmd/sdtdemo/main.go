// Command sdtdemo shows gosdt's probes in one process: it lists the sites discovery
// sealed, runs a workload with its probes disabled, enabled and disabled again, and
// prints what each phase cost per call and what the probes delivered. "sdtdemo
// workload" is the program sdtctl demo starts and traces.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
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
	protocol := fs.String("protocol", "auto", "how sites are patched: auto, atomic or rendezvous")
	if err := fs.Parse(args); err != nil {
		return err
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

	phase := func(name string) {
		fires.Store(0)
		start := time.Now()
		for i := range *calls {
			handle(i)
		}
		el := time.Since(start)
		fmt.Fprintf(out, "%-9s %8.2f ns/call  %10d events\n", name, float64(el.Nanoseconds())/float64(*calls), fires.Load())
	}
	fmt.Fprintln(out)
	phase("disabled")
	start := time.Now()
	n, err := sdt.Enable("demo:::*")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "enabled %d sites in %v\n", n, time.Since(start).Round(time.Microsecond))
	phase("enabled")
	if _, err := sdt.Disable("demo:::*"); err != nil {
		return err
	}
	phase("disabled")
	fmt.Fprintf(out, "retries seen while enabled: %d\n", retries.Load())
	return nil
}
