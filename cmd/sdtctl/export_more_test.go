//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/otelcoltest"
)

// TestExportFollow: export -n follows every process of the name, also those that
// start after it, each with a resource of its own; one that exits ends its own export
// (its summary says so), not the others'.
func TestExportFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and programs")
	}
	col := otelcoltest.Start(t)
	exportEnv(t, col, "grpc")
	exp := runCmd(cmdExport, "-n", "otelapp", appSpec, "--flush-timeout", "20s")
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(exp.stderr.String(), "waiting for one"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("export -n with no process of the name: %q", exp.stderr.String())
		}
	}
	a := startApp(t, nil, "serve")
	waitHeld(t, a.pid, appSpec, 1, 1)
	ra := a.do(t, "req 1")
	b := startApp(t, nil, "serve")
	waitHeld(t, b.pid, appSpec, 1, 1)
	rb := b.do(t, "req 2")
	a.cmd.Process.Kill()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(exp.stderr.String(), "the process exited"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no summary of the process that exited:\n%s", exp.stderr.String())
		}
	}
	rc := b.do(t, "req 3")
	if err := exp.end(t, 60*time.Second); err != nil {
		t.Fatalf("export: %v\n%s", err, exp.stderr.String())
	}
	sums := summaries(t, exp.stderr.String())
	for _, p := range []struct {
		app *app
		res map[string]any
	}{{a, ra}, {b, rb}, {b, rc}} {
		if s := sums[p.app.pid]; s.spans != 4 && !(p.app == b && s.spans == 8) {
			t.Errorf("pid %d: summary %q, want 4 spans (b: 8)", p.app.pid, s.line)
		}
		spans, _ := col.WaitSpans(30*time.Second, func(s []otelcoltest.Span) bool { return len(s) >= 12 })
		found := false
		for _, s := range spans {
			if s.Name == "app.Handle" && s.Resource["process.pid"] == int64(p.app.pid) && s.TraceID == p.res["trace_id"] {
				found = true
			}
		}
		if !found {
			t.Errorf("no app.Handle span of pid %d in trace %v among %d spans", p.app.pid, p.res["trace_id"], len(spans))
		}
	}
}

// TestExportSampling: OTEL_TRACES_SAMPLER=parentbased_traceidratio keeps a quarter of
// the calls that begin a trace, decided at their entry for all the calls inside, and
// every call whose program span was sampled.
func TestExportSampling(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and programs")
	}
	col := otelcoltest.Start(t)
	exportEnv(t, col, "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "0.25")
	a := startApp(t, nil, "serve")
	exp := runCmd(cmdExport, "-p", strconv.Itoa(a.pid), appSpec, "--flush-timeout", "20s")
	waitHeld(t, a.pid, appSpec, 1, 1)
	const roots, joined = 400, 20
	for n := range roots {
		a.do(t, "nocontext "+strconv.Itoa(1000+n))
	}
	for n := range joined {
		a.do(t, "req "+strconv.Itoa(n))
	}
	if err := exp.end(t, 60*time.Second); err != nil {
		t.Fatalf("export: %v\n%s", err, exp.stderr.String())
	}
	s := summaries(t, exp.stderr.String())[a.pid]
	kept := int(s.spans) - 4*joined
	t.Logf("%d of %d root calls sampled: %s", kept, roots, s.line)
	// Binomial(400, 0.25): 100 on average, below 50 or above 150 once in 10^14 runs.
	if kept < 50 || kept > 150 || s.calls != roots+4*joined || s.sampledOut != uint64(roots-kept) {
		t.Errorf("%s: want about %d of %d root calls and all %d joined ones", s.line, roots/4, roots, 4*joined)
	}
	spans, _ := col.WaitSpans(30*time.Second, func(sp []otelcoltest.Span) bool { return len(sp) >= int(s.spans) })
	handles, lookups := 0, 0
	for _, sp := range spans {
		switch {
		case sp.Name == "app.Handle":
			handles++
		case sp.Name == "app.Lookup" && sp.ParentSpanID == "":
			lookups++
		}
	}
	if handles != joined || lookups != kept || len(spans) != int(s.spans) {
		t.Errorf("the collector has %d spans, %d app.Handle, %d root app.Lookup; want %d, %d, %d", len(spans), handles, lookups, s.spans, joined, kept)
	}
}

// TestExportCollectorDown: a collector that hangs (stopped by SIGSTOP) or is gone
// stops neither the traced program nor the export: the program's calls go on, the
// export ends promptly when asked, and what
// could not be sent is counted, dropped in the exporter's queue or failed.
func TestExportCollectorDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and programs")
	}
	col := otelcoltest.Start(t)
	exportEnv(t, col, "http/protobuf")
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "2000")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
	// About 20,000 calls a second: an export that keeps up, so that the program does the
	// same work for it whatever the collector does (a program that fires faster than the
	// export reads has its buffers drop, counted, the more the faster the export reads).
	l := startLoop(t, 100000)
	exp := runCmd(cmdExport, "-p", strconv.Itoa(l.pid), appSpec, "--flush-timeout", "2s")
	waitHeld(t, l.pid, appSpec, 1, 1)

	const phase = 1500 * time.Millisecond
	for _, step := range []struct {
		what   string
		do     func()
		outage bool
	}{
		{"up", func() {}, false},
		{"paused", col.Pause, true},
		{"resumed", col.Resume, false},
		{"stopped", col.Stop, true},
	} {
		step.do()
		r := l.rate(t, phase)
		t.Logf("collector %s: %.0f calls/s", step.what, r)
		// The program never waits for the export. How fast it goes in an outage is the
		// machine's other load as much as anything, so only its progress is asserted;
		// BenchmarkExport (bench/README.md) measures the difference.
		if step.outage && r <= 0 {
			t.Errorf("the program made no calls while the collector was %s: it waited for the export", step.what)
		}
	}
	t0 := time.Now()
	err := exp.end(t, 60*time.Second)
	took := time.Since(t0)
	s := summaries(t, exp.stderr.String())[l.pid]
	t.Logf("export ended in %v: %v; %s", took, err, s.line)
	if exitCode(err) != exitError || !strings.Contains(err.Error(), "did not reach the collector") {
		t.Errorf("export with the collector gone: %v, want exit %d saying what did not reach it", err, exitError)
	}
	if s.queueDrops+s.failed == 0 {
		t.Errorf("nothing counted lost with the collector down: %s", s.line)
	}
	// The flush timeout, the export under way canceled, and the streams' end: not the
	// exporters' retries (a minute).
	if took > 20*time.Second {
		t.Errorf("the export took %v to end after it was asked to, with --flush-timeout 2s", took)
	}
}

// loop is a running otelapp loop: app.Spin as fast as it goes, its count of calls
// read as it prints it.
type loop struct {
	pid int
	mu  sync.Mutex
	n   int64
	at  time.Time
	cmd *exec.Cmd
}

func startLoop(t testing.TB, work int) *loop {
	t.Helper()
	a := startApp(t, nil, "loop", strconv.Itoa(work))
	l := &loop{pid: a.pid, cmd: a.cmd}
	go func() {
		for a.out.Scan() {
			f := strings.Fields(a.out.Text())
			if len(f) != 3 {
				continue
			}
			n, _ := strconv.ParseInt(f[1], 10, 64)
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			l.mu.Lock()
			l.n, l.at = n, time.Unix(0, ns)
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *loop) count() (int64, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, l.at
}

// rate is the program's calls per second over d.
func (l *loop) rate(t testing.TB, d time.Duration) float64 {
	t.Helper()
	time.Sleep(100 * time.Millisecond)
	n0, t0 := l.count()
	time.Sleep(d)
	n1, t1 := l.count()
	if !t1.After(t0) {
		t.Fatalf("the program stopped saying how many calls it made")
	}
	return float64(n1-n0) / t1.Sub(t0).Seconds()
}

// TestExportJSON: --json prints spans and metrics as JSON lines, and the summary as a
// JSON object, without a collector; --by ARG keys the metrics of the probes that have
// ARG by its values (the others' by probe).
func TestExportJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a program")
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // not used
	a := startApp(t, nil, "serve")
	exp := runCmd(cmdExport, "-p", strconv.Itoa(a.pid), appSpec, "otelapp:::block", "--json", "-i", "200ms", "--by", "n")
	waitHeld(t, a.pid, appSpec, 1, 1)
	waitHeld(t, a.pid, "otelapp:::block", 1, 2)
	res := a.do(t, "req 3")
	a.do(t, "timed 7 1")
	if err := exp.end(t, 60*time.Second); err != nil {
		t.Fatalf("export --json: %v\n%s", err, exp.stderr.String())
	}
	var spans, metrics, sums int
	byArg := false
	sc := bufio.NewScanner(strings.NewReader(exp.stdout.String()))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		switch {
		case m["Name"] != nil:
			spans++
			if m["Name"] == "app.Handle" && !strings.Contains(sc.Text(), fmt.Sprint(res["trace_id"])) {
				t.Errorf("app.Handle not in the program's trace %v: %s", res["trace_id"], sc.Text())
			}
		case m["ScopeMetrics"] != nil:
			metrics++
			if strings.Contains(sc.Text(), `"Key":"gosdt.arg.n","Value":{"Type":"INT64","Value":7}`) &&
				strings.Contains(sc.Text(), `"Key":"gosdt.spec","Value":{"Type":"STRING","Value":"otelapp:::block"}`) {
				byArg = true
			}
		case m["export"] != nil:
			sums++
			if e := m["export"].(map[string]any); e["spans"] != float64(6) || m["pid"] != float64(a.pid) {
				t.Errorf("summary %s, want 6 spans of pid %d", sc.Text(), a.pid)
			}
		}
	}
	if spans != 6 || metrics == 0 || sums != 1 || !byArg {
		t.Errorf("--json printed %d spans, %d metric exports (keyed by n: %v), %d summaries; want 6 (4 of req, Timed and its block), some keyed by n=7, 1:\n%s",
			spans, metrics, byArg, sums, exp.stdout.String())
	}
}

// TestExportUsage: what export refuses, with the exit codes of the rest of sdtctl.
func TestExportUsage(t *testing.T) {
	pid := strconv.Itoa(startTarget(t))
	for _, tc := range []struct {
		env  [][2]string
		args []string
		code int
		msg  string
	}{
		{nil, []string{"-p", pid}, exitUsage, "no SPEC"},
		{nil, []string{"-p", pid, "a:b:c:d:e"}, exitBadSpec, ""},
		{[][2]string{{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"}}, []string{"-p", pid, "e2e:::"}, exitUsage, "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"},
		{[][2]string{{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "udp"}}, []string{"-p", pid, "e2e:::"}, exitUsage, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{[][2]string{{"OTEL_TRACES_SAMPLER", "sometimes"}}, []string{"-p", pid, "e2e:::"}, exitUsage, "OTEL_TRACES_SAMPLER"},
		{[][2]string{{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "2"}}, []string{"-p", pid, "e2e:::"}, exitUsage, "OTEL_TRACES_SAMPLER_ARG"},
		{[][2]string{{"OTEL_METRIC_EXPORT_INTERVAL", "soon"}}, []string{"-p", pid, "e2e:::"}, exitUsage, "OTEL_METRIC_EXPORT_INTERVAL"},
		{nil, []string{"-p", pid, "e2e:::", "-i", "10ms"}, exitUsage, "at least"},
		{nil, []string{"-p", "999999999", "e2e:::"}, exitNoProcess, ""},
		{nil, []string{"-p", pid, "nosuch:::"}, exitNoMatch, "no spec matches"},
		{nil, []string{"-n", "nosuchprogram", "e2e:::", "-d", "300ms"}, exitNoProcess, "no gosdt process named"},
		{nil, []string{"-p", pid, "-n", "target", "e2e:::"}, exitUsage, "give one of them"},
	} {
		for _, kv := range tc.env {
			t.Setenv(kv[0], kv[1])
		}
		var out, errb syncBuffer
		err := run(append([]string{"export"}, tc.args...), &out, &errb)
		if exitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("export %v %v: %v (exit %d), want exit %d saying %q", tc.env, tc.args, err, exitCode(err), tc.code, tc.msg)
		}
		for _, kv := range tc.env {
			t.Setenv(kv[0], "")
		}
	}
	var out, errb syncBuffer
	if err := run([]string{"export", "--help"}, &out, &errb); !errors.Is(err, errHelp) || !strings.Contains(out.String(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("export --help (on stdout): %v\n%s", err, out.String())
	}
}
