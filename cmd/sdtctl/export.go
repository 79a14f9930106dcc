package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/gosdt/gosdt/cmd/sdtctl/internal/calls"
	"github.com/gosdt/gosdt/cmd/sdtctl/internal/otelexport"
	"github.com/gosdt/gosdt/internal/ctlproto"
)

const exportUsage = `usage: sdtctl export [-p PID | -n NAME] SPEC... [flags]
       sdtctl export SPEC... [flags] -- CMD [ARGS...]

Sends the calls the probes SPEC matches see to OpenTelemetry: every call an entry/return
pair (fbt:PKG:FUNC:entry and :return) or a latency probe (latency_ns first) sees is a
span, named after its function, nested per goroutine, its arguments and results its
attributes, an error status when it panicked or returned an error (the error's text),
code.function, code.namespace, code.filepath, code.lineno; other probes fired in a call
are events of its span. A call with a context.Context carrying a span of the program's
joins that trace when the program imports github.com/gosdt/gosdt/sdt/otelsdt. Metrics,
every INTERVAL: gosdt.probe.fires (every fire, keyed as stat --by KEY),
gosdt.probe.latency (histograms of latency_ns, ns), gosdt.export.spans and
gosdt.export.dropped (gosdt.where: process_buffer, exporter_queue, export_failed).
Until Ctrl-C or -d; then, per process, what was exported and dropped where. With
-- CMD, sdtctl starts the command with the first SPEC's trace open from its start (its
run-time function probes placed before main runs), exports until it exits, and exits
as trace -- CMD does.

Environment (the OpenTelemetry SDK's):
  OTEL_EXPORTER_OTLP_ENDPOINT, _TRACES_ENDPOINT, _METRICS_ENDPOINT   default http://localhost:4318 (grpc: 4317)
  OTEL_EXPORTER_OTLP_PROTOCOL (_TRACES_, _METRICS_)  http/protobuf (default) or grpc
  OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE, _INSECURE
  OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG   default parentbased_always_on; decided at a
                                                 call's entry, for every call inside it
  OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME    added to the traced process's own (read from
                                                 its environment), which win for service.name
  OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER    otlp (default) or none
  OTEL_METRIC_EXPORT_INTERVAL                    milliseconds (default 10000; -i wins)
  OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION   explicit_bucket_histogram (default:
                                                 bounds 2^k-1 ns) or base2_exponential_bucket_histogram
  OTEL_BSP_MAX_QUEUE_SIZE (8192), OTEL_BSP_MAX_EXPORT_BATCH_SIZE (512),
  OTEL_BSP_SCHEDULE_DELAY (1000), OTEL_BSP_EXPORT_TIMEOUT (30000)

Flags:
`

// followEvery is how often export -n looks for new processes of its name.
const followEvery = 500 * time.Millisecond

// exportOpts is what every process's export shares.
type exportOpts struct {
	specs    []string
	many     bool // --many: run-time probes on more than manyFuncs functions
	by       string
	bufsize  int
	interval time.Duration // of the stat streams' snapshots
	flush    time.Duration
	cfg      otelexport.Config
	exps     *otelexport.Exporters
	json     bool
	out      io.Writer // summaries (JSON: stdout, shared with the JSON exporters)
	stderr   io.Writer
}

func cmdExport(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error {
	args, command, follow := splitCommand(args)
	o := newFlags("export", stderr, true)
	dur := o.fs.Duration("d", 0, "stop after `DURATION`")
	iv := o.fs.Duration("i", 0, "export metrics every `INTERVAL` (default: OTEL_METRIC_EXPORT_INTERVAL, else 10s)")
	by := o.fs.String("by", "probe", "what the metrics are keyed by, as stat --by: probe, site, or an argument (argN or its name; a spec none of whose probes has it, by probe)")
	bufsize := o.fs.String("bufsize", "", "`BYTES` of each per-P trace buffer in the process (k, m, g suffixes; default 4m)")
	flush := o.fs.Duration("flush-timeout", 5*time.Second, "at the end, how long to wait for the collector to take what is left")
	many := o.manyFlag()
	o.detachFlag()
	o.fs.Usage = func() {
		fmt.Fprint(o.fs.Output(), exportUsage)
		o.fs.PrintDefaults()
	}
	specs, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(specs) == 0 {
		return fail(exitUsage, "export: no SPEC")
	}
	if err := checkSpecCount("export", specs); err != nil {
		return err
	}
	if err := checkSpecs(specs); err != nil {
		return err
	}
	if *dur < 0 || *iv < 0 || *flush < 0 {
		return fail(exitUsage, "export: -d, -i and --flush-timeout take durations above 0")
	}
	size, err := parseSize(*bufsize)
	if err != nil {
		return fail(exitUsage, "export: --bufsize: %v", err)
	}
	cfg, err := otelexport.FromEnv(os.Getenv)
	if err != nil {
		return fail(exitUsage, "export: %v", err)
	}
	if *iv > 0 {
		cfg.Interval = *iv
	}
	if cfg.Interval < ctlproto.MinInterval {
		return fail(exitUsage, "export: metrics every %v: at least %v", cfg.Interval, ctlproto.MinInterval)
	}
	eo := &exportOpts{specs: specs, many: *many, by: *by, bufsize: size, interval: min(cfg.Interval, time.Second), flush: *flush,
		cfg: cfg, json: o.json, out: stderr, stderr: stderr}
	var jsonOut io.Writer
	if o.json {
		lw := &otelexport.LockedWriter{W: stdout}
		jsonOut, eo.out = lw, lw
	}
	// What the SDK's exporters and readers report: said on stderr, at most once in a
	// while (a collector that is down would say it every export).
	otel.SetErrorHandler(&errorReport{w: stderr})
	if follow && !cfg.Traces {
		return fail(exitUsage, "export -- CMD: the command starts with its first spec's trace open, and OTEL_TRACES_EXPORTER=none exports none: use -p or -n")
	}
	exps, err := otelexport.NewExporters(context.Background(), cfg, jsonOut)
	if err != nil {
		return fail(exitUsage, "export: %v", err)
	}
	// With -- CMD: the first spec's trace stream, as exportProcess asks for it, is
	// what the command opens at its start, and that stream takes it over.
	q := &ctlproto.Request{Op: ctlproto.OpTrace, Spec: specs[0], BufSize: size}
	var cls []*client
	var cmd *followed
	switch {
	case o.name != "" && !follow && o.detach:
		err = fail(exitUsage, "export: --detach is for a command started with -- CMD")
	case o.name != "" && !follow:
		cls, err = o.exportTargets()
	default:
		cls, cmd, err = o.streams("export", follow, command, q, stdout, stderr)
	}
	if err != nil || (follow && cls == nil) {
		for _, cl := range cls {
			cl.close()
		}
		exps.Shutdown(context.Background())
		return err
	}
	eo.exps = exps
	// Building spans allocates much that lives briefly: a lazier collector costs
	// memory sdtctl has, and spares CPU, which the traced process may want.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	st := newStopperFor(stop, cmd != nil)
	if *dur > 0 {
		t := time.AfterFunc(*dur, st.stop)
		defer t.Stop()
	}
	ex := &exporter{exportOpts: eo, fails: failures{stderr: stderr}, seen: map[int]bool{}, following: o.name != "" || cmd != nil}
	for _, cl := range cls {
		ex.start(cl, st.C)
	}
	if o.name != "" {
		ex.follow(o.name, st.C)
	}
	ex.wg.Wait()
	st.release()
	ctx, cancel := context.WithTimeout(context.Background(), *flush)
	exps.Shutdown(ctx)
	cancel()
	err = ex.result(o.name, specs)
	if cmd != nil {
		return cmd.finish(err, stdout, stderr, o.json)
	}
	return err
}

// result is the export's error: what failed, else what was dropped.
func (ex *exporter) result(name string, specs []string) error {
	switch {
	case ex.fails.err() != nil:
		return ex.fails.err()
	case name != "" && ex.started == 0:
		return fail(exitNoProcess, "no gosdt process named %q came during the export", name)
	case ex.started > 0 && ex.matched == 0:
		return fail(exitNoMatch, "%s: no spec matches a probe of the processes exported", strings.Join(specs, " "))
	case ex.lost > 0:
		return fail(exitError, "export: %s", ex.droppedText())
	}
	return nil
}

// exportTargets is -p's process, -n's processes running now (none is not an error:
// export follows the name), or the only gosdt process.
func (o *opts) exportTargets() ([]*client, error) {
	if o.name == "" {
		return o.targets(false)
	}
	if o.pid != 0 {
		return nil, fail(exitUsage, "-p %d and -n %s: give one of them", o.pid, o.name)
	}
	var keep []*client
	for _, cl := range procs() {
		if cl.hello.Command == o.name {
			keep = append(keep, cl)
		} else {
			cl.close()
		}
	}
	return keep, nil
}

// exporter runs the export of every process.
type exporter struct {
	*exportOpts
	wg        sync.WaitGroup
	fails     failures
	following bool // -n: processes come and go; -- CMD: the command's exit ends the export

	mu      sync.Mutex
	seen    map[int]bool
	started int                // processes exported
	matched int                // of them, those a spec matched
	lost    int                // processes of which something was dropped or failed on the way
	dropped otelexport.Summary // what was dropped, summed over the processes
	lastErr string
}

func (ex *exporter) start(cl *client, stop <-chan struct{}) {
	ex.mu.Lock()
	ex.seen[cl.pid] = true
	ex.started++
	ex.mu.Unlock()
	ex.wg.Add(1)
	go func() {
		defer ex.wg.Done()
		matched, s, err := ex.exportProcess(cl, stop)
		ex.mu.Lock()
		if matched {
			ex.matched++
		}
		if s != nil && s.ProcessBuffers+s.ExporterQueue+s.ExportFailed+s.MetricsFailed > 0 {
			ex.lost++
			ex.dropped.ProcessBuffers += s.ProcessBuffers
			ex.dropped.ExporterQueue += s.ExporterQueue
			ex.dropped.ExportFailed += s.ExportFailed
			ex.dropped.MetricsFailed += s.MetricsFailed
			if s.LastError != "" {
				ex.lastErr = s.LastError
			}
		}
		ex.mu.Unlock()
		switch {
		case exitCode(err) == exitNoMatch && !matched:
			err = nil // said already; the end says if no process matched
		case exitCode(err) == exitExited && ex.following:
			err = nil // -n follows processes that come and go, -- CMD its command: its summary said so
		}
		ex.fails.add(err)
	}()
}

// droppedText says what was dropped where, over every process (exit 1).
func (ex *exporter) droppedText() string {
	d := &ex.dropped
	var parts []string
	for _, w := range []struct {
		n    uint64
		what string
	}{
		{d.ProcessBuffers, "events dropped in the processes' buffers (a larger --bufsize keeps more)"},
		{d.ExporterQueue, "spans dropped in the exporter's queue (OTEL_BSP_MAX_QUEUE_SIZE, or a faster collector)"},
		{d.ExportFailed, "spans in exports that failed"},
		{d.MetricsFailed, "metric exports failed"},
	} {
		if w.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", w.n, w.what))
		}
	}
	t := "what did not reach the collector: " + strings.Join(parts, "; ")
	if ex.lastErr != "" && d.ExportFailed+d.MetricsFailed > 0 {
		t += "; last error: " + ex.lastErr
	}
	return t
}

// follow looks for processes of name that start, until stop.
func (ex *exporter) follow(name string, stop <-chan struct{}) {
	ex.mu.Lock()
	none := ex.started == 0
	ex.mu.Unlock()
	if none {
		fmt.Fprintf(ex.stderr, "sdtctl: no gosdt process named %q yet: waiting for one\n", name)
	}
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, pid := range candidates() {
			ex.mu.Lock()
			seen := ex.seen[pid]
			ex.seen[pid] = true
			ex.mu.Unlock()
			if seen {
				continue
			}
			cl, err := dial(pid)
			if err != nil {
				continue // not ours to export, or gone already
			}
			if cl.hello.Command != name {
				cl.close()
				continue
			}
			ex.start(cl, stop)
		}
	}
}

// candidates are the pids that may be gosdt processes: those with a socket in our
// directory, and those in other namespaces (foreign).
func candidates() []int {
	var pids []int
	ents, _ := os.ReadDir(ctlproto.Dir())
	for _, e := range ents {
		if n, ok := ctlproto.PidOf(e.Name()); ok && n != os.Getpid() {
			pids = append(pids, n)
		}
	}
	return append(pids, foreign()...)
}

// exportProcess exports one process until stop or its exit: it lists what the specs
// match, opens a trace stream (spans) and stat streams (metrics) per spec, each on a
// connection of its own, and at the end says what was exported and lost. matched
// reports whether a spec matched a probe.
func (ex *exporter) exportProcess(cl *client, stop <-chan struct{}) (matched bool, sum *otelexport.Summary, err error) {
	defer cl.close()
	type specProbes struct {
		spec   string
		n      int
		probes []ctlproto.Probe
	}
	var specs []specProbes
	var all []ctlproto.Probe
	for i, s := range ex.specs {
		// As trace and stat: run-time probes on many functions are asked for; the
		// list below and every stream carry the signatures it reads.
		if err := checkRuntimeCost(cl, s, ex.many); err != nil {
			return false, nil, err
		}
		r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: s})
		if err != nil {
			return false, nil, err
		}
		if len(r.Probes) == 0 {
			fmt.Fprintf(ex.stderr, "sdtctl: pid %d: %q matches no probe\n", cl.pid, s)
			continue
		}
		noteReturns(cl.pid, r.Probes, ex.stderr)
		specs = append(specs, specProbes{s, i, r.Probes})
		all = append(all, r.Probes...)
	}
	if len(specs) == 0 {
		return false, nil, fail(exitNoMatch, "pid %d: no spec matches a probe: %s", cl.pid, strings.Join(ex.specs, " "))
	}
	res, err := otelexport.Resource(cl.pid, cl.hello.Command, os.Getenv)
	if err != nil {
		return true, nil, fail(exitError, "pid %d: its resource: %v", cl.pid, err)
	}
	relist := make(chan struct{}, 1)
	proc := ex.exps.NewProcess(cl.pid, res, otelexport.ProcessOptions{
		Relist: func() {
			select {
			case relist <- struct{}{}:
			default:
			}
		},
	})
	proc.SetProbes(all)
	for _, sp := range specs {
		var names []string
		for _, p := range sp.probes {
			names = append(names, p.Name)
		}
		proc.Claim(sp.n, names)
	}

	// The streams of this process end together: at stop, or when one of them fails
	// (the process exited).
	end := make(chan struct{})
	var endOnce sync.Once
	ending := func() { endOnce.Do(func() { close(end) }) }
	go func() {
		select {
		case <-stop:
			ending()
		case <-end:
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	// A stream that fails ends alone, said (a stat the process refuses), unless the
	// process exited: then they all end.
	// gone, where set, is told the stream's connection of a process that exited.
	run := func(q *ctlproto.Request, each func(*client, *ctlproto.Response), last func(*ctlproto.Response), gone func(*client)) {
		wg.Go(func() {
			c, err := dial(cl.pid)
			if err == nil {
				c.sigs = cl.sigs
				var r *ctlproto.Response
				r, err = stream(c, q, end, func(r *ctlproto.Response) { each(c, r) })
				if gone != nil && r == nil && exitCode(err) == exitExited {
					gone(c)
				}
				c.close()
				if err == nil && last != nil {
					last(r)
				}
			}
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				if exitCode(err) == exitExited {
					ending()
				} else {
					fmt.Fprintf(ex.stderr, "sdtctl: pid %d: %s %s: %v\n", cl.pid, q.Op, q.Spec, err)
				}
			}
		})
	}
	for _, sp := range specs {
		if ex.cfg.Traces {
			id := proc.AddTrace(sp.n)
			var er ctlproto.EventReader
			descs := map[*ctlproto.Desc]*calls.Probe{}
			var bad error
			var rs rings // the process's buffers: what it wrote and did not send is read there once it has exited
			var drops uint64
			take := func(c *client, r *ctlproto.Response) {
				if !rs.started && c.started != nil {
					rs.take(c, c.started)
				}
				if r != nil {
					rs.take(c, r)
				}
			}
			run(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: sp.spec, BufSize: ex.bufsize},
				func(c *client, r *ctlproto.Response) {
					if r.Kind != ctlproto.KindEvents {
						return
					}
					take(c, r)
					drops = r.Drops
					if bad != nil {
						return
					}
					if err := proc.Trace(id, &er, descs, r); err != nil {
						bad = err
						fmt.Fprintf(ex.stderr, "sdtctl: pid %d: %s: %v\n", cl.pid, sp.spec, err)
					}
				},
				func(r *ctlproto.Response) { proc.TraceEnd(id, r) },
				func(c *client) {
					take(c, nil)
					if !rs.shared() || bad != nil {
						return
					}
					if !er.Timed() && c.started != nil {
						er.Take(c.started) // its clock
					}
					var recs []byte
					lost := rs.leftover(&er, func(rec ctlproto.Record, _ *ctlproto.Desc, _ *ctlproto.Layout) bool {
						recs = append(recs, rec...)
						return true
					})
					if err := proc.Trace(id, &er, descs, &ctlproto.Response{Kind: ctlproto.KindEvents, Records: recs, Drops: drops + lost}); err != nil {
						fmt.Fprintf(ex.stderr, "sdtctl: pid %d: %s: %v\n", cl.pid, sp.spec, err)
					}
				})
		}
		if ex.cfg.Metrics {
			by, key, kind := ex.statKey(sp.probes, false)
			ms := int64(ex.interval / time.Millisecond)
			count := proc.AddStat(&otelexport.StatStream{Spec: sp.spec, SpecN: sp.n, By: by, ByKey: key, ByKind: kind})
			run(&ctlproto.Request{Op: ctlproto.OpStat, Spec: sp.spec, By: by, IntervalMS: ms},
				func(_ *client, r *ctlproto.Response) {
					if r.Stat != nil {
						proc.Stat(count, r.Stat)
					}
				}, nil, nil)
			if timed(sp.probes) {
				by, key, kind := ex.statKey(sp.probes, true)
				lat := proc.AddStat(&otelexport.StatStream{Spec: sp.spec, SpecN: sp.n, By: by, ByKey: key, ByKind: kind, Timed: true})
				run(&ctlproto.Request{Op: ctlproto.OpStat, Spec: sp.spec, By: by, Value: "latency_ns", Hist: ctlproto.HistQuantize, IntervalMS: ms},
					func(_ *client, r *ctlproto.Response) {
						if r.Stat != nil {
							proc.Stat(lat, r.Stat)
						}
					}, nil, nil)
			}
		}
	}
	// Probes that appear after the start (functions probed at run time) are listed
	// again, at most once a second, for where their functions are.
	relisted := make(chan struct{})
	go func() {
		defer close(relisted)
		for {
			select {
			case <-end:
				return
			case <-relist:
			}
			var probes []ctlproto.Probe
			for _, sp := range specs {
				r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: sp.spec})
				if err != nil {
					return
				}
				probes = append(probes, r.Probes...)
			}
			proc.SetProbes(probes)
			select {
			case <-end:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	wg.Wait()
	ending()
	<-relisted
	s := proc.Close(ex.flush)
	exited := exitCode(first) == exitExited
	ex.summary(cl, &s, exited)
	if exited {
		first = fail(exitExited, "pid %d: process exited during the export (what it sent is exported, see above)", cl.pid)
	}
	return true, &s, first
}

// statKey is what a spec's stat stream is keyed by: --by, unless it names an argument
// none of the spec's probes has (those of another spec may), or, for the latency
// histograms (timed), none of those that have latency_ns: then probe. The attribute
// an argument key is given is named as the spans name it.
func (ex *exporter) statKey(probes []ctlproto.Probe, timed bool) (by, key string, kind byte) {
	if ex.by == "probe" || ex.by == "site" {
		return ex.by, "", 0
	}
	for _, p := range probes {
		if timed && (len(p.Args) == 0 || p.Args[0].Name != "latency_ns") {
			continue
		}
		for i, a := range p.Args {
			if a.Name == ex.by || "arg"+strconv.Itoa(i) == ex.by {
				provider, _, _ := strings.Cut(p.Name, ":")
				return ex.by, attrKeyOf(provider, a.Name), kindOfType(a.Type)
			}
		}
	}
	return "probe", "", 0
}

func attrKeyOf(provider, name string) string { return otelexport.AttrKey(provider, name) }

// kindOfType is the value kind of a Go type's name, for typing --by ARG's keys.
func kindOfType(t string) byte {
	switch {
	case t == "bool":
		return ctlproto.ValBool
	case strings.HasPrefix(t, "int") || t == "time.Duration":
		return ctlproto.ValInt
	case strings.HasPrefix(t, "uint") || t == "byte":
		return ctlproto.ValUint
	}
	return ctlproto.ValString
}

// timed reports whether a probe of the list has latency_ns first: a return or a
// latency probe, whose latencies make histograms. A run-time return probe refused
// everywhere (noteReturns said why) has none to give.
func timed(probes []ctlproto.Probe) bool {
	for _, p := range probes {
		if len(p.Args) > 0 && p.Args[0].Name == "latency_ns" && !allRefused(p.Sites) {
			return true
		}
	}
	return false
}

// summary says what the export of a process did: on stderr, or as one JSON object.
func (ex *exporter) summary(cl *client, s *otelexport.Summary, exited bool) {
	if ex.json {
		m := map[string]any{"pid": cl.pid, "command": cl.hello.Command, "export": s}
		if exited {
			m["exited"] = true
		}
		printJSON(ex.out, m)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pid %d (%s): %d events, %d calls: %d spans exported", cl.pid, cl.hello.Command, s.Events, s.Calls, s.Spans)
	if s.SampledOut > 0 {
		fmt.Fprintf(&b, ", %d sampled out", s.SampledOut)
	}
	fmt.Fprintf(&b, ", %d span events; dropped: %d in the process's buffers, %d in the exporter's queue, %d in failed exports",
		s.SpanEvents, s.ProcessBuffers, s.ExporterQueue, s.ExportFailed)
	if s.MetricsFailed > 0 {
		fmt.Fprintf(&b, ", %d metric exports failed", s.MetricsFailed)
	}
	var notes []string
	for _, n := range []struct {
		v    uint64
		what string
	}{{s.Unfinished, "unfinished"}, {s.Unpaired, "without their entry"}, {s.Late, "events late"}, {s.Early, "events released before their window (too many held)"}, {s.OpenLimit, "entries past the open-call limit"}, {s.Outside, "events outside any call"}} {
		if n.v > 0 {
			notes = append(notes, fmt.Sprintf("%d %s", n.v, n.what))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	}
	if exited {
		b.WriteString("; the process exited")
	}
	if s.LastError != "" && s.ExportFailed+s.MetricsFailed > 0 {
		fmt.Fprintf(&b, "; last error: %s", s.LastError)
	}
	fmt.Fprintln(ex.out, b.String())
}

// errorReport says the SDK's errors on stderr: the first at once, then at most one a
// few seconds with how many it did not say.
type errorReport struct {
	mu        sync.Mutex
	w         io.Writer
	last      time.Time
	hidden    int
	noMetrics bool // the endpoint's refusal of metrics was said
}

func (r *errorReport) Handle(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if otelexport.NoMetricsReceiver(err) {
		// A traces-only backend (Jaeger): said once, with the fix; the spans go on.
		if !r.noMetrics {
			r.noMetrics = true
			fmt.Fprintf(r.w, "sdtctl: export: the endpoint takes no metrics (%v): spans are exported, metrics are not; OTEL_METRICS_EXPORTER=none stops sending them\n", err)
		}
		return
	}
	if time.Since(r.last) < 5*time.Second {
		r.hidden++
		return
	}
	more := ""
	if r.hidden > 0 {
		more = fmt.Sprintf(" (and %d more errors)", r.hidden)
	}
	fmt.Fprintf(r.w, "sdtctl: export: %v%s\n", err, more)
	r.last, r.hidden = time.Now(), 0
}
