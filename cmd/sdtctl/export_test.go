//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/otelcoltest"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// The program the export tests trace: testdata/otelapp, its package app instrumented
// by its rules, built once per test binary.
const appSpec = "fbt:example.com/otelapp/app::"

func otelAppBin(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("fbt probes need a site matcher, which %s/%s has not", runtime.GOOS, runtime.GOARCH)
	}
	if testutil.Emulated() {
		t.Skip("under an emulator: the export tests run natively")
	}
	sdtctlBin := testbin.Sdtctl(t)
	rules, _ := filepath.Abs("testdata/otelapp/fbt.rules")
	return buildModule(t, "otelapp", "otelapp", "./cmd/otelapp", "-toolexec", sdtctlBin+" toolexec -rules "+rules)
}

// app is a running otelapp serve.
type app struct {
	pid int
	in  io.WriteCloser
	out *bufio.Scanner
	cmd *exec.Cmd
}

// startApp starts otelapp with args and env added to the test's, and waits for its
// control socket.
func startApp(t testing.TB, env []string, args ...string) *app {
	t.Helper()
	cmd := exec.Command(otelAppBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // also if the test binary crashes
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	a := &app{pid: cmd.Process.Pid, in: in, out: bufio.NewScanner(out), cmd: cmd}
	if !a.out.Scan() {
		t.Fatal("otelapp did not start")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ctlproto.SocketPath(a.pid)); err == nil {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatal("otelapp bound no control socket in 10 s")
		}
	}
}

// do sends a serve command and returns what the app says it did.
func (a *app) do(t *testing.T, line string) map[string]any {
	t.Helper()
	fmt.Fprintln(a.in, line)
	if !a.out.Scan() {
		t.Fatalf("otelapp: no answer to %q", line)
	}
	var m map[string]any
	if err := json.Unmarshal(a.out.Bytes(), &m); err != nil {
		t.Fatalf("otelapp answered %q to %q: %v", a.out.Text(), line, err)
	}
	return m
}

// running is a command run in the test's process until stopped.
type running struct {
	stop           chan struct{}
	done           chan error
	stdout, stderr syncBuffer
}

func runCmd(f func(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error, args ...string) *running {
	r := &running{stop: make(chan struct{}), done: make(chan error, 1)}
	go func() { r.done <- f(args, &r.stdout, &r.stderr, r.stop) }()
	return r
}

// end stops the command and returns its error, failing the test if it does not end
// within limit.
func (r *running) end(t testing.TB, limit time.Duration) error {
	t.Helper()
	close(r.stop)
	select {
	case err := <-r.done:
		return err
	case <-time.After(limit):
		t.Fatalf("still running %v after it was stopped; stderr:\n%s", limit, r.stderr.String())
		return nil
	}
}

// waitHeld waits until every site of every probe spec matches in pid is held on by
// traces trace streams and stats stat streams (sdtctl's streams have started).
func waitHeld(t testing.TB, pid int, spec string, traces, stats int) {
	t.Helper()
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var b, errb syncBuffer
		err := run([]string{"list", "-p", strconv.Itoa(pid), spec, "--json"}, &b, &errb)
		out = b.String()
		ok := err == nil && out != ""
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m struct{ Probe ctlproto.Probe }
			if json.Unmarshal([]byte(line), &m) != nil {
				ok = false
				break
			}
			for _, s := range m.Probe.Sites {
				tr, st := 0, 0
				for _, h := range s.HeldBy {
					tr += strings.Count(h, " trace")
					st += strings.Count(h, " stat")
				}
				ok = ok && tr >= traces && st >= stats
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if len(out) > 2000 {
				out = out[:2000] + "..."
			}
			t.Fatalf("the probes of %s in pid %d are not held by %d traces and %d stats after 30 s:\n%s", spec, pid, traces, stats, out)
		}
	}
}

// summaryRE reads the text summary of a process's export.
var summaryRE = regexp.MustCompile(`pid (\d+) \(([^)]*)\): (\d+) events, (\d+) calls: (\d+) spans exported(?:, (\d+) sampled out)?, (\d+) span events; dropped: (\d+) in the process's buffers, (\d+) in the exporter's queue, (\d+) in failed exports`)

type exportSummary struct {
	pid                                          int
	events, calls, spans, sampledOut, spanEvents uint64
	processDrops, queueDrops, failed             uint64
	line                                         string
}

func summaries(t *testing.T, stderr string) map[int]exportSummary {
	t.Helper()
	out := map[int]exportSummary{}
	for _, m := range summaryRE.FindAllStringSubmatch(stderr, -1) {
		n := func(i int) uint64 { v, _ := strconv.ParseUint(m[i], 10, 64); return v }
		s := exportSummary{pid: int(n(1)), events: n(3), calls: n(4), spans: n(5), sampledOut: n(6), spanEvents: n(7),
			processDrops: n(8), queueDrops: n(9), failed: n(10), line: m[0]}
		// Every call ended is a span the sampler kept or left out, and every span kept
		// is exported, dropped in the queue or lost in a failed export: once.
		if s.spans+s.queueDrops+s.failed+s.sampledOut != s.calls {
			t.Errorf("summary does not add up: %d spans + %d dropped + %d failed + %d sampled out != %d calls: %s",
				s.spans, s.queueDrops, s.failed, s.sampledOut, s.calls, m[0])
		}
		out[s.pid] = s
	}
	if len(out) == 0 {
		t.Errorf("no export summary in:\n%s", stderr)
	}
	return out
}

// exportEnv points the export at the collector over protocol, and makes it quick.
func exportEnv(t *testing.T, col *otelcoltest.Collector, protocol string) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.Endpoint(protocol))
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "500")
	for _, v := range []string{"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION"} {
		t.Setenv(v, "")
	}
}

// lineOf is the line of the first line of file that starts with prefix.
func lineOf(t *testing.T, file, prefix string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line %q", file, prefix)
	return 0
}
