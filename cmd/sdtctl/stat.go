package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/outfile"
	"github.com/gosdt/gosdt/internal/quantize"
)

// A stat runs in steps: parseStat reads its flags into a request, refusing what no
// process would take; place puts it on the processes and checks with them what its
// spec matches; read streams their snapshots and prints each (show: a line of JSON,
// or printStat's table, or by stack printStackStat's, which share its header,
// histograms and footer); cmdStat then writes the stacks files and says how a
// command it started ended.

// statRun is a stat as its flags ask for it.
type statRun struct {
	o       *opts
	q       *ctlproto.Request
	command []string // -- CMD
	follow  bool     // a command started with -- CMD
	many    bool     // --many
	// shown is the value column's name (len(ARG) as the user wrote it); folding the
	// flag that asked for it (--value or --hist).
	shown, folding string
	every          time.Duration // -i: between snapshots printed
	pprof, folded  bool          // --pprof, --folded asked for
	outs           map[string]*outfile.Target
	started        time.Time
	printSnap      func(io.Writer, int, *ctlproto.Stat)
}

func cmdStat(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error {
	r, err := parseStat(args, stderr)
	if err != nil {
		return err
	}
	cls, cmd, err := r.place(stdout, stderr)
	if cls == nil {
		return err
	}
	defer func() {
		for _, cl := range cls {
			cl.close()
		}
	}()
	if err != nil {
		return err
	}
	fails := failures{stderr: stderr}
	final, ended := r.read(cls, cmd, stop, &fails, stdout)
	fails.add(writeStacks(final, r.started, r.outs["pprof"], r.outs["folded"], stdout, stderr))
	if cmd != nil {
		cmd.sawEnd = ended.exited
		if err := cmd.finish(fails.err(), stdout, stderr, r.o.json); err != nil {
			return err
		}
		return ended.uncounted
	}
	return fails.err()
}

// statEnd is how a stat of a command started with -- CMD saw it end: exited, the
// stream ended with the command; uncounted, an error when it ended before the first
// snapshot, so that none of its fires were shown.
type statEnd struct {
	exited    bool
	uncounted error
}

// parseStat reads stat's flags into the request, refusing what no process would take
// before any is asked.
func parseStat(args []string, stderr io.Writer) (*statRun, error) {
	args, command, follow := splitCommand(args)
	o := newFlags("stat", stderr, true)
	by := o.fs.String("by", "probe", "key: probe, site, stack (the fire's Go call stack), or an argument (argN or its name)")
	value := o.fs.String("value", "", "sum, bound and average the number argument `ARG` (argN, its name, or len(ARG) for a string's length)")
	hist := o.fs.String("hist", "", "quantize the number argument `ARG` (power-of-two buckets; implies --value ARG; len(ARG) for a string's length)")
	linear := o.fs.String("linear", "", "with --hist: linear buckets `LOW,HIGH,STEP` instead (lquantize)")
	where := o.fs.String("where", "", "fold only fires whose arguments match `EXPR` (arg0 > 100 && path == \"/api\"), evaluated in the process")
	clear := o.fs.Bool("clear", false, "each snapshot shows its interval's values, not all since the start")
	iv := o.fs.Duration("i", time.Second, "`INTERVAL` between snapshots")
	dur := o.fs.Duration("d", 0, "stop after `DURATION`")
	pprofPath := o.fs.String("pprof", "", "with --by stack: write the last snapshot to `FILE` (- for stdout) as a pprof profile (go tool pprof)")
	foldedPath := o.fs.String("folded", "", "with --by stack: write the last snapshot to `FILE` (- for stdout) as folded stacks (flamegraph.pl, speedscope)")
	many := o.manyFlag()
	o.detachFlag()
	pos, err := o.parse(args)
	if err != nil {
		return nil, err
	}
	if err := oneSpec("stat", pos); err != nil {
		return nil, err
	}
	if (*pprofPath != "" || *foldedPath != "") && *by != "stack" {
		return nil, fail(exitUsage, "stat: --pprof and --folded write stacks: with --by stack")
	}
	r := &statRun{o: o, command: command, follow: follow, every: *iv, pprof: *pprofPath != "", folded: *foldedPath != "",
		printSnap: printStat}
	// The files are checked before the stat runs: a directory or a FIFO refused at the
	// end would waste the whole run.
	if r.outs, err = resolveOutputs("stat", map[string]string{"pprof": *pprofPath, "folded": *foldedPath}); err != nil {
		return nil, err
	}
	r.started = time.Now()
	if *by == "stack" {
		r.printSnap = printStackStat
	}
	if err := checkSpecs(pos); err != nil {
		return nil, err
	}
	if *iv < ctlproto.MinInterval {
		return nil, fail(exitUsage, "stat: -i below %v", ctlproto.MinInterval)
	}
	if *dur < 0 {
		return nil, fail(exitUsage, "stat: -d %v: want a duration above 0", *dur)
	}
	if len(*where) > ctlproto.MaxWhere {
		return nil, fail(exitUsage, "stat: --where: %d bytes, at most %d", len(*where), ctlproto.MaxWhere)
	}
	q := &ctlproto.Request{Op: ctlproto.OpStat, Spec: pos[0], By: *by, Value: *value, Clear: *clear, Where: *where,
		IntervalMS: iv.Milliseconds(), DurationMS: dur.Milliseconds()}
	if r.folding, err = foldFlags(q, *value, *hist, *linear); err != nil {
		return nil, err
	}
	r.shown = q.Value
	// A command started with -- CMD: snapshots come every MinInterval, so that the
	// last before it exits is recent; those of -i are printed (follow.go).
	if follow {
		if *clear {
			return nil, fail(exitUsage, "stat: --clear with -- CMD: the snapshots are all since the start")
		}
		q.IntervalMS = ctlproto.MinInterval.Milliseconds()
		q.Value = strings.TrimSuffix(strings.TrimPrefix(q.Value, "len("), ")") // checked by the process
	}
	r.q, r.many = q, *many
	return r, nil
}

// place connects to the processes (or starts the command) and, unless it was started
// with -- CMD (whose connection streams already), checks with each what the spec
// matches: the cost of run-time probes, the arguments --by, --value and --where name,
// and that a folded argument is a number. cls is nil when there is nothing to read,
// err then the command's result; with cls, err is a refusal after connecting.
func (r *statRun) place(stdout, stderr io.Writer) (cls []*client, cmd *followed, err error) {
	q := r.q
	cls, cmd, err = r.o.streams("stat", r.follow, r.command, q, stdout, stderr)
	if cls == nil {
		return nil, nil, err
	}
	if len(cls) > 1 && (r.pprof || r.folded) {
		return cls, cmd, fail(exitUsage, "stat: --pprof and --folded: of one process (-p PID), not %d", len(cls))
	}
	if r.follow {
		return cls, cmd, nil
	}
	var keyed []string // the arguments --by and --value name
	if q.By != "probe" && q.By != "site" && q.By != "stack" {
		keyed = append(keyed, q.By)
	}
	if arg := strings.TrimSuffix(strings.TrimPrefix(q.Value, "len("), ")"); arg != "" && arg != q.By {
		keyed = append(keyed, arg)
	}
	for _, cl := range cls {
		if err := checkRuntimeCost(cl, q.Spec, r.many); err != nil {
			return cls, cmd, err
		}
		noteFunctions(cl, q.Spec, stderr)
		noteLeftOut(cl, q.Spec, "--by/--value", keyed, stderr)
		noteLeftOut(cl, q.Spec, "--where", whereNames(q.Where), stderr)
	}
	if q.Value != "" {
		arg, length := q.Value, false
		if a, ok := strings.CutPrefix(q.Value, "len("); ok {
			if a, ok = strings.CutSuffix(a, ")"); ok {
				arg, length = a, true
			}
		}
		for _, cl := range cls {
			if err := checkFolded(cl, q.Spec, r.folding, q.Value, arg, length); err != nil {
				return cls, cmd, err
			}
		}
		q.Value = arg // of a string, the process folds the length
	}
	return cls, cmd, nil
}

// read streams every process's snapshots until the stat ends, printing each as it
// comes (of a command started with -- CMD: one each -i and its last), and returns
// the last received and how the command, if any, ended; what fails goes to fails.
// Aggregations live in the process: a command's fires after its last snapshot (at
// most ctlproto.MinInterval before its end) die with it, and read says so.
func (r *statRun) read(cls []*client, cmd *followed, stop <-chan struct{}, fails *failures, stdout io.Writer) (final *ctlproto.Stat, end statEnd) {
	st := newStopperFor(stop, cmd != nil)
	var mu sync.Mutex // one snapshot printed at a time
	var wg sync.WaitGroup
	for _, cl := range cls {
		wg.Go(func() {
			var last *ctlproto.Stat
			snaps, lastAt := 0, int64(0)
			var printed time.Time
			_, err := stream(cl, r.q, st.C, func(resp *ctlproto.Response) {
				if resp.Stat == nil {
					return
				}
				if resp.Stat.Value != "" {
					resp.Stat.Value = r.shown
				}
				mu.Lock()
				defer mu.Unlock()
				last, snaps, final, lastAt = resp.Stat, snaps+1, resp.Stat, resp.Stat.Time
				if cmd == nil {
					r.show(stdout, cl.pid, resp.Stat)
					return
				}
				if time.Since(printed) >= r.every && !printed.IsZero() {
					r.show(stdout, cl.pid, resp.Stat)
					printed, last = time.Now(), nil
				} else if printed.IsZero() {
					printed = time.Now()
				}
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case cmd != nil:
				if last != nil {
					r.show(stdout, cl.pid, last) // the last snapshot, taken at most MinInterval before the command ended
				}
				if exitCode(err) != exitExited {
					break
				}
				err, end.exited = nil, true
				if snaps == 0 {
					end.uncounted = fail(exitExited, "%s (pid %d) ended before the stat's first snapshot (one every %v): none of its fires were counted (sdtctl trace reads what a command fired after its end)",
						cmd.name, cl.pid, ctlproto.MinInterval)
				} else {
					fmt.Fprintf(fails.stderr, "sdtctl: %s (pid %d) ended %v after the last snapshot (shown): its fires in between, if any, are not counted (sdtctl trace reads what a command fired after its end)\n",
						cmd.name, cl.pid, time.Since(time.Unix(0, lastAt)).Round(time.Millisecond))
				}
			case exitCode(err) == exitExited:
				err = statExited(stdout, r.o.json, cl.pid, snaps, last)
			}
			fails.add(err)
		})
	}
	wg.Wait()
	st.release()
	return final, end
}

// show prints a snapshot of process pid: a line of JSON, or a table.
func (r *statRun) show(w io.Writer, pid int, s *ctlproto.Stat) {
	if r.o.json {
		printJSON(w, map[string]any{"pid": pid, "stat": jsonStat{time.Unix(0, s.Time), s}})
		return
	}
	r.printSnap(w, pid, s)
}

// foldFlags sets what q folds, and in which buckets, from --value, --hist and
// --linear, and returns the flag that asked for a value: --value or --hist.
func foldFlags(q *ctlproto.Request, value, hist, linear string) (folding string, err error) {
	if hist != "" {
		if value != "" && value != hist {
			return "", fail(exitUsage, "stat: --value %s and --hist %s: one argument folds", value, hist)
		}
		q.Value, q.Hist = hist, ctlproto.HistQuantize
	}
	if linear != "" {
		if hist == "" {
			return "", fail(exitUsage, "stat: --linear shapes the buckets of --hist ARG")
		}
		if err := parseLinear(linear, q); err != nil || q.LinStep <= 0 || q.LinHigh <= q.LinLow {
			return "", fail(exitUsage, "stat: --linear %q: want LOW,HIGH,STEP with LOW < HIGH and STEP > 0", linear)
		}
		q.Hist = ctlproto.HistLinear
	}
	if hist != "" {
		return "--hist", nil
	}
	return "--value", nil
}

// parseLinear reads --linear's LOW,HIGH,STEP: three integers, nothing more.
func parseLinear(s string, q *ctlproto.Request) error {
	f := strings.Split(s, ",")
	if len(f) != 3 {
		return fmt.Errorf("%d fields", len(f))
	}
	var v [3]int64
	for i := range f {
		n, err := strconv.ParseInt(strings.TrimSpace(f[i]), 10, 64)
		if err != nil {
			return err
		}
		v[i] = n
	}
	q.LinLow, q.LinHigh, q.LinStep = v[0], v[1], v[2]
	return nil
}

// statExited says what a stat had received from a process that exited during it:
// how many snapshots and the last (in --json, the last again, with "exited").
func statExited(stdout io.Writer, asJSON bool, pid, snaps int, last *ctlproto.Stat) error {
	if asJSON {
		m := map[string]any{"pid": pid, "exited": true, "snapshots": snaps}
		if last != nil {
			m["stat"] = jsonStat{time.Unix(0, last.Time), last}
		}
		printJSON(stdout, m)
	}
	if last == nil {
		return fail(exitExited, "pid %d: process exited during the stat, before its first snapshot", pid)
	}
	var fires int64
	for _, r := range last.Rows {
		fires += r.Count
	}
	return fail(exitExited, "pid %d: process exited during the stat: %d snapshots received, the last at %s (%d fires counted, shown above)",
		pid, snaps, time.Unix(0, last.Time).Format("15:04:05"), fires)
}

// checkFolded refuses --value/--hist on an argument that is a string in a probe spec
// matches (the process would fold its length), unless asked for its length,
// len(ARG), which only a string has. The arguments' types come from list.
func checkFolded(cl *client, spec, flag, value, arg string, length bool) error {
	r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: spec})
	if err != nil {
		return err
	}
	for _, p := range r.Probes {
		for i, a := range p.Args {
			if arg != a.Name && arg != "arg"+strconv.Itoa(i) {
				continue
			}
			switch {
			case a.Type == "string" && !length:
				return fail(exitUsage, "stat: %s %s: argument %s of %s is a string; %s folds numbers "+
					"(--by %s counts its values; %s 'len(%s)' folds its length)", flag, value, a.Name, p.Name, flag, arg, flag, arg)
			case a.Type != "string" && length:
				return fail(exitUsage, "stat: %s %s: argument %s of %s is of type %s, not a string: len() takes a string", flag, value, a.Name, p.Name, a.Type)
			}
		}
	}
	return nil
}

// jsonStat is a Stat as --json prints it: its time as RFC 3339.
type jsonStat struct {
	Time time.Time `json:"time"`
	*ctlproto.Stat
}

// printStat prints a snapshot as a table, a row a key, most fires first, and each
// row's histogram below it.
func printStat(w io.Writer, pid int, s *ctlproto.Stat) {
	printStatHeader(w, pid, s.By, s)
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
			printRowHist(w, s, r.Hist)
		}
	}
	printStatFooter(w, s)
}

// printStatHeader prints the line that starts a snapshot (printStat's, and by stack
// printStackStat's): its time, the process, its key, and whether its values are all
// since the start or its interval's.
func printStatHeader(w io.Writer, pid int, by string, s *ctlproto.Stat) {
	what := "since the start"
	if s.Interval {
		what = "this interval"
	}
	fmt.Fprintf(w, "%s pid %d, by %s, %s\n", time.Unix(0, s.Time).Format("15:04:05"), pid, by, what)
}

// printRowHist prints a row's histogram with the snapshot's buckets: linear
// (--linear) or powers of two.
func printRowHist(w io.Writer, s *ctlproto.Stat, hist []ctlproto.Bucket) {
	if s.Linear != nil {
		printLinear(w, s.Linear, hist)
	} else {
		printHist(w, hist)
	}
}

// printStatFooter ends a snapshot: the fires it could not count, and a blank line.
func printStatFooter(w io.Writer, s *ctlproto.Stat) {
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
