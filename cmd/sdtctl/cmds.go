package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/quantize"
	"github.com/gosdt/gosdt/internal/spec"
)

func printJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "%s\n", b)
}

func cmdPs(args []string, stdout, stderr io.Writer) error {
	o := newFlags("ps", stderr, false)
	if _, err := o.parse(args); err != nil {
		return err
	}
	ps := procs()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !o.json {
		fmt.Fprintln(tw, "PID\tCOMMAND\tPROBES\tSITES ON")
	}
	for _, cl := range ps {
		h := cl.hello
		if o.json {
			printJSON(stdout, map[string]any{"pid": cl.pid, "ns_pid": h.Pid, "command": h.Command, "probes": h.NProbes, "sites_on": h.SitesOn})
		} else {
			fmt.Fprintf(tw, "%d\t%s%s\t%d\t%d\n", cl.pid, h.Command, cl.nsNote(), h.NProbes, h.SitesOn)
		}
		cl.close()
	}
	return tw.Flush()
}

func cmdList(args []string, stdout, stderr io.Writer) error {
	o := newFlags("list", stderr, true)
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if o.pid == 0 && o.name == "" && len(pos) > 0 {
		fi, err := os.Stat(pos[0])
		if err != nil && strings.ContainsRune(pos[0], '/') {
			return fail(exitError, "%v", err) // a path, not a spec: specs have no '/' before a ':'
		}
		if err == nil && fi.Mode().IsRegular() {
			if len(pos) > 2 {
				return fail(exitUsage, "list BINARY [SPEC]: too many arguments")
			}
			return listBinary(pos[0], pos[1:], o.json, stdout)
		}
	}
	if len(pos) > 1 {
		return fail(exitUsage, "list: one SPEC at most")
	}
	spec := ""
	if len(pos) == 1 {
		spec = pos[0]
		if err := checkSpecs(pos); err != nil {
			return err
		}
	}
	cls, err := o.targets(true)
	if err != nil {
		return err
	}
	var first error
	for _, cl := range cls {
		r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: spec})
		cl.close()
		if err != nil {
			fmt.Fprintln(stderr, "sdtctl:", err)
			if first == nil {
				first = err
			}
			continue
		}
		if o.json {
			for _, p := range r.Probes {
				printJSON(stdout, map[string]any{"pid": cl.pid, "probe": p})
			}
			continue
		}
		fmt.Fprintf(stdout, "pid %d (%s%s): %d probes\n", cl.pid, cl.hello.Command, cl.nsNote(), len(r.Probes))
		printProbes(stdout, r.Probes)
	}
	return first
}

func printProbes(w io.Writer, ps []ctlproto.Probe) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tARGS\tSTATE\tHITS\tHELD BY")
	for _, p := range ps {
		var args []string
		for _, a := range p.Args {
			args = append(args, a.Name+" "+a.Type)
		}
		state := "off"
		if p.Enabled {
			state = "on"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", p.Name, strings.Join(args, ", "), state, p.Hits, strings.Join(p.HeldBy, ", "))
		for _, s := range p.Sites {
			why := ""
			if s.Reason != "" {
				why = " (" + s.Reason + ")"
			}
			fmt.Fprintf(tw, "  %#x %s:%d\t%s\t%s%s\t%d\t%s\n", s.Addr, shortFile(s.File), s.Line, s.Kind, s.State, why, s.Hits, strings.Join(s.HeldBy, ", "))
		}
	}
	tw.Flush()
}

func shortFile(f string) string {
	if i := strings.LastIndex(f, "/"); i >= 0 {
		if j := strings.LastIndex(f[:i], "/"); j >= 0 {
			return f[j+1:]
		}
	}
	return f
}

func cmdSwitch(cmd string, args []string, stdout, stderr io.Writer) error {
	o := newFlags(cmd, stderr, true)
	specs, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(specs) == 0 {
		return fail(exitUsage, "%s: no SPEC", cmd)
	}
	if err := checkSpecs(specs); err != nil {
		return err
	}
	cls, err := o.targets(true)
	if err != nil {
		return err
	}
	var first error
	for _, cl := range cls {
		q := &ctlproto.Request{Op: cmd, Specs: specs, Persist: cmd == ctlproto.OpEnable}
		r, err := cl.call(q)
		cl.close()
		if err != nil {
			fmt.Fprintln(stderr, "sdtctl:", err)
			if first == nil {
				first = err
			}
			continue
		}
		if o.json {
			printJSON(stdout, map[string]any{"pid": cl.pid, "command": cl.hello.Command, "op": cmd, "sites": r.N, "kept": r.Kept, "kept_by": r.KeptBy, "already_on": r.AlreadyOn})
			continue
		}
		fmt.Fprintf(stdout, "pid %d (%s): %sd %d sites", cl.pid, cl.hello.Command, cmd, r.N)
		if r.Kept > 0 {
			held := "another owner"
			if len(r.KeptBy) > 0 {
				held = strings.Join(r.KeptBy, ", ")
			}
			fmt.Fprintf(stdout, "; %d stay on, held by %s", r.Kept, held)
		}
		if r.AlreadyOn > 0 {
			fmt.Fprintf(stdout, "; %d were already on", r.AlreadyOn)
		}
		fmt.Fprintln(stdout)
	}
	return first
}

// interrupt returns a channel closed on Ctrl-C (or when stop is closed), and a
// function to stop listening.
func interrupt(stop <-chan struct{}) (<-chan struct{}, func()) {
	done := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	quit := make(chan struct{})
	go func() {
		select {
		case <-sig:
		case <-stop:
		case <-quit:
			return
		}
		close(done)
	}()
	return done, func() { signal.Stop(sig); close(quit) }
}

// stream runs a trace or stat request: it sends stop on interrupt and calls each
// for every reply until the end.
func stream(cl *client, q *ctlproto.Request, stop <-chan struct{}, each func(*ctlproto.Response)) (*ctlproto.Response, error) {
	r, err := cl.call(q)
	if err != nil {
		return nil, err
	}
	if r.Kind != ctlproto.KindStarted {
		return nil, fail(exitError, "pid %d: unexpected %s reply", cl.pid, r.Kind)
	}
	intr, done := interrupt(stop)
	defer done()
	go func() {
		<-intr
		cl.send(&ctlproto.Request{Op: ctlproto.OpStop})
	}()
	for {
		r, err := cl.recv()
		if err != nil {
			return nil, err
		}
		if r.Kind == ctlproto.KindEnd {
			return r, nil
		}
		each(r)
	}
}

func cmdStat(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error {
	o := newFlags("stat", stderr, true)
	by := o.fs.String("by", "probe", "key: probe, site, or an argument (argN or its name)")
	value := o.fs.String("value", "", "sum, bound and average the argument `ARG` (argN or its name)")
	hist := o.fs.String("hist", "", "quantize the argument `ARG` (power-of-two buckets; implies --value ARG)")
	linear := o.fs.String("linear", "", "with --hist: linear buckets `LOW,HIGH,STEP` instead (lquantize)")
	where := o.fs.String("where", "", "fold only fires whose arguments match `EXPR` (arg0 > 100 && path == \"/api\"), evaluated in the process")
	clear := o.fs.Bool("clear", false, "each snapshot shows its interval's values, not all since the start")
	iv := o.fs.Duration("i", time.Second, "`INTERVAL` between snapshots")
	dur := o.fs.Duration("d", 0, "stop after `DURATION`")
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fail(exitUsage, "stat: want one SPEC")
	}
	if err := checkSpecs(pos); err != nil {
		return err
	}
	if *iv < ctlproto.MinInterval {
		return fail(exitUsage, "stat: -i below %v", ctlproto.MinInterval)
	}
	if len(*where) > ctlproto.MaxWhere {
		return fail(exitUsage, "stat: --where: %d bytes, at most %d", len(*where), ctlproto.MaxWhere)
	}
	q := &ctlproto.Request{Op: ctlproto.OpStat, Spec: pos[0], By: *by, Value: *value, Clear: *clear, Where: *where,
		IntervalMS: iv.Milliseconds(), DurationMS: dur.Milliseconds()}
	if *hist != "" {
		if *value != "" && *value != *hist {
			return fail(exitUsage, "stat: --value %s and --hist %s: one argument folds", *value, *hist)
		}
		q.Value, q.Hist = *hist, ctlproto.HistQuantize
	}
	if *linear != "" {
		if *hist == "" {
			return fail(exitUsage, "stat: --linear shapes the buckets of --hist ARG")
		}
		if _, err := fmt.Sscanf(*linear, "%d,%d,%d", &q.LinLow, &q.LinHigh, &q.LinStep); err != nil ||
			q.LinStep <= 0 || q.LinHigh <= q.LinLow {
			return fail(exitUsage, "stat: --linear %q: want LOW,HIGH,STEP with LOW < HIGH and STEP > 0", *linear)
		}
		q.Hist = ctlproto.HistLinear
	}
	cls, err := o.targets(false)
	if err != nil {
		return err
	}
	cl := cls[0]
	defer cl.close()
	_, err = stream(cl, q, stop, func(r *ctlproto.Response) {
		if r.Stat == nil {
			return
		}
		if o.json {
			printJSON(stdout, map[string]any{"pid": cl.pid, "stat": jsonStat{time.Unix(0, r.Stat.Time), r.Stat}})
			return
		}
		printStat(stdout, cl.pid, r.Stat)
	})
	return err
}

// jsonStat is a Stat as --json prints it: its time as RFC 3339.
type jsonStat struct {
	Time time.Time `json:"time"`
	*ctlproto.Stat
}

func printStat(w io.Writer, pid int, s *ctlproto.Stat) {
	what := "since the start"
	if s.Interval {
		what = "this interval"
	}
	fmt.Fprintf(w, "%s pid %d, by %s, %s\n", time.Unix(0, s.Time).Format("15:04:05"), pid, s.By, what)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	if s.Value != "" {
		fmt.Fprintf(tw, "COUNT\tSUM(%[1]s)\tMIN\tMAX\tAVG\t %s\t\n", s.Value, strings.ToUpper(s.By))
	} else {
		fmt.Fprintf(tw, "COUNT\t %s\t\n", strings.ToUpper(s.By))
	}
	for _, r := range s.Rows {
		if s.Value != "" {
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.1f\t %s\t\n", r.Count, r.Sum, r.Min, r.Max, r.Avg, r.Key)
		} else {
			fmt.Fprintf(tw, "%d\t %s\t\n", r.Count, r.Key)
		}
	}
	tw.Flush()
	for _, r := range s.Rows {
		if len(r.Hist) > 0 {
			fmt.Fprintf(w, "\n  %s\n", r.Key)
			if s.Linear != nil {
				printLinear(w, s.Linear, r.Hist)
			} else {
				printHist(w, r.Hist)
			}
		}
	}
	if s.Overflow > 0 {
		fmt.Fprintf(w, "(%d fires not counted: too many keys)\n", s.Overflow)
	}
	fmt.Fprintln(w)
}

// printHist prints a histogram as DTrace does: a row of zero above and below.
func printHist(w io.Writer, hist []ctlproto.Bucket) {
	idx := quantize.Bucket
	lo, hi := idx(hist[0].Low), idx(hist[len(hist)-1].Low)
	counts := map[int]uint64{}
	var total uint64
	for _, b := range hist {
		counts[idx(b.Low)] = b.Count
		total += b.Count
	}
	lo, hi = max(lo-1, 0), min(hi+1, 127)
	rows := make([]histRow, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		rows = append(rows, histRow{strconv.FormatInt(quantize.Low(i), 10), counts[i]})
	}
	printRows(w, rows, total)
}

// printLinear prints a linear histogram as DTrace prints lquantize: "< LOW" first,
// ">= HIGH" last, a row of zero above and below the non-empty ones.
func printLinear(w io.Writer, l *ctlproto.Linear, hist []ctlproto.Bucket) {
	n := int((l.High-l.Low+l.Step-1)/l.Step) + 2
	index := func(low int64) int {
		if low == math.MinInt64 {
			return 0
		}
		return min(1+int((low-l.Low)/l.Step), n-1)
	}
	counts := map[int]uint64{}
	var total uint64
	for _, b := range hist {
		counts[index(b.Low)] += b.Count
		total += b.Count
	}
	lo, hi := max(index(hist[0].Low)-1, 0), min(index(hist[len(hist)-1].Low)+1, n-1)
	rows := make([]histRow, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		label := strconv.FormatInt(l.Low+int64(i-1)*l.Step, 10)
		switch i {
		case 0:
			label = "< " + strconv.FormatInt(l.Low, 10)
		case n - 1:
			label = ">= " + strconv.FormatInt(l.High, 10)
		}
		rows = append(rows, histRow{label, counts[i]})
	}
	printRows(w, rows, total)
}

type histRow struct {
	label string
	count uint64
}

func printRows(w io.Writer, rows []histRow, total uint64) {
	fmt.Fprintf(w, "  %16s  %s %s\n", "value", "------------- Distribution -------------", "count")
	for _, r := range rows {
		bar := int(float64(r.count) / float64(total) * 40)
		fmt.Fprintf(w, "  %16s |%-40s %d\n", r.label, strings.Repeat("@", bar), r.count)
	}
}

// checkSpecs refuses a malformed spec before any process is looked for: the error is
// the spec's, whatever runs.
func checkSpecs(specs []string) error {
	for _, s := range specs {
		if _, err := spec.Parse(s); err != nil {
			return fail(exitBadSpec, "%v", err)
		}
	}
	return nil
}
