//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/otelcoltest"
)

// The spans export makes of run-time function probes are the program's call trees:
// plainapp's tree.Handle calls A, B and C in turn and B calls D, which yields its P,
// from several goroutines at once; entries are delivered as they fire, returns later
// from the process's return rings, on another P. Every call made while the export ran
// must be one span under its own parent, none unfinished or without its entry.

const treeSpec = "fbt:example.com/plainapp/tree::"

// treeChildren is each function's calls, in order.
var treeChildren = map[string][]string{
	"tree.Handle": {"tree.A", "tree.B", "tree.C"},
	"tree.A":      nil,
	"tree.B":      {"tree.D"},
	"tree.C":      nil,
	"tree.D":      nil,
}

// treeFigures is what the spans of requests calls of tree.Handle came to.
type treeFigures struct {
	spans, traces, unfinished, entryUnseen int
	handlers, exact                        int // Handle spans, and those with exactly their own children
	wrong                                  []string
}

func (f *treeFigures) String() string {
	pct := 0.0
	if f.handlers > 0 {
		pct = 100 * float64(f.exact) / float64(f.handlers)
	}
	return fmt.Sprintf("%d spans, %d traces, %d gosdt.unfinished, %d gosdt.entry_unseen, %d handler spans, %d (%.1f%%) with exactly their own children",
		f.spans, f.traces, f.unfinished, f.entryUnseen, f.handlers, f.exact, pct)
}

// treeCheck checks spans against requests calls of tree.Handle(0..requests-1), every
// one made while the export ran.
func treeCheck(spans []otelcoltest.Span, requests int) *treeFigures {
	f := &treeFigures{spans: len(spans)}
	wrong := func(format string, args ...any) {
		if len(f.wrong) < 20 {
			f.wrong = append(f.wrong, fmt.Sprintf(format, args...))
		}
	}
	byID := map[string]*otelcoltest.Span{}
	kids := map[string][]*otelcoltest.Span{}
	traces := map[string]bool{}
	names := map[string]int{}
	for i := range spans {
		s := &spans[i]
		byID[s.SpanID] = s
		traces[s.TraceID] = true
		names[s.Name]++
		if s.Attrs["gosdt.unfinished"] == true {
			f.unfinished++
		}
		if s.Attrs["gosdt.entry_unseen"] == true {
			f.entryUnseen++
		}
	}
	f.traces = len(traces)
	for i := range spans {
		if s := &spans[i]; s.ParentSpanID != "" {
			kids[s.ParentSpanID] = append(kids[s.ParentSpanID], s)
		}
	}
	for name := range treeChildren {
		if names[name] != requests {
			wrong("%d spans of %s, want %d", names[name], name, requests)
		}
	}
	seen := map[int64]bool{}
	// exact reports whether s has its own calls as children, in order, with its
	// argument and goroutine, and so on down.
	var exact func(s *otelcoltest.Span) bool
	exact = func(s *otelcoltest.Span) bool {
		want := treeChildren[s.Name]
		cs := kids[s.SpanID]
		slices.SortFunc(cs, func(a, b *otelcoltest.Span) int { return a.Start.Compare(b.Start) })
		var got []string
		ok := true
		for _, c := range cs {
			got = append(got, c.Name)
			if c.TraceID != s.TraceID || c.Attrs["gosdt.arg.i"] != s.Attrs["gosdt.arg.i"] || c.Attrs["gosdt.goroutine"] != s.Attrs["gosdt.goroutine"] ||
				c.Start.Before(s.Start) || c.End.After(s.End) || c.Attrs["gosdt.unfinished"] == true || c.Attrs["gosdt.entry_unseen"] == true {
				ok = false
			}
		}
		if !ok || !slices.Equal(got, want) {
			return false
		}
		for _, c := range cs {
			if !exact(c) {
				return false
			}
		}
		return true
	}
	for i := range spans {
		s := &spans[i]
		if s.Name != "tree.Handle" {
			if s.ParentSpanID == "" || byID[s.ParentSpanID] == nil {
				wrong("%s(%v) is a root span: %+v", s.Name, s.Attrs["gosdt.arg.i"], s.Attrs)
			}
			continue
		}
		f.handlers++
		n, _ := s.Attrs["gosdt.arg.i"].(int64)
		if seen[n] {
			wrong("two spans of tree.Handle(%d)", n)
		}
		seen[n] = true
		if s.ParentSpanID != "" {
			wrong("tree.Handle(%d) has a parent %s", n, s.ParentSpanID)
		}
		if exact(s) {
			f.exact++
		} else {
			var got []string
			for _, c := range kids[s.SpanID] {
				got = append(got, fmt.Sprintf("%s(%v)", c.Name, c.Attrs["gosdt.arg.i"]))
			}
			wrong("tree.Handle(%d) on goroutine %v: children %s", n, s.Attrs["gosdt.goroutine"], strings.Join(got, " "))
		}
	}
	if f.traces != requests {
		wrong("%d traces, want one per request: %d", f.traces, requests)
	}
	if f.unfinished+f.entryUnseen > 0 {
		wrong("%d spans unfinished, %d without their entry", f.unfinished, f.entryUnseen)
	}
	return f
}

// TestExportRuntimeTrees exports plainapp's tree called by goroutines of its own
// (tree) and by the handler of an HTTP server of its own (http), at GOMAXPROCS 1, 2
// and 8: with -p, of calls made once the export has placed its probes, and with
// -- CMD, of every call the command makes.
func TestExportRuntimeTrees(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and programs")
	}
	needDWARF(t)
	for _, via := range []string{"p", "cmd"} {
		for _, mode := range []string{"tree", "http"} {
			for _, procs := range []int{1, 2, 8} {
				t.Run(fmt.Sprintf("%s/%s/GOMAXPROCS=%d", via, mode, procs), func(t *testing.T) { testExportTrees(t, via, mode, procs, false) })
			}
		}
	}
	// A process that does not run for a while (a loaded machine; here SIGSTOP, 300 ms
	// in every 350) sends the entries it makes after before the returns it made
	// before, which wait in its rings: its silence does not release them.
	t.Run("p/http/stopped", func(t *testing.T) { testExportTrees(t, "p", "http", 2, true) })
	// A command that exits right after its calls (main returns): the returns of its
	// last calls are in the trace's buffers, which outlive it, not in rings of its own.
	for _, procs := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("exit/tree/GOMAXPROCS=%d", procs), func(t *testing.T) { testExportTrees(t, "exit", "tree", procs, false) })
	}
}

func testExportTrees(t *testing.T, via, mode string, procs int, stopped bool) {
	goroutines, each := 8, 100
	if stopped {
		each = 1000
	}
	requests := goroutines * each
	col := otelcoltest.Start(t)
	exportEnv(t, col, "grpc")
	// The calls come in a burst, faster than one collector takes their spans.
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", strconv.Itoa(10*requests))
	var stderr string
	pid := 0
	switch via {
	case "p":
		a := startPlainApp(t, "GOMAXPROCS="+strconv.Itoa(procs))
		pid = a.pid
		exp := runCmd(cmdExport, "-p", strconv.Itoa(a.pid), treeSpec, "--flush-timeout", "20s")
		waitHeld(t, a.pid, treeSpec+"entry", 1, 1)
		waitHeld(t, a.pid, treeSpec+"return", 1, 2)
		done := make(chan struct{})
		stops := 0
		if stopped {
			go func() {
				defer close(done)
				for {
					select {
					case <-time.After(50 * time.Millisecond):
					case <-done:
						return
					}
					syscall.Kill(a.pid, syscall.SIGSTOP)
					time.Sleep(300 * time.Millisecond)
					syscall.Kill(a.pid, syscall.SIGCONT)
					stops++
				}
			}()
		}
		a.do(t, fmt.Sprintf("%s %d %d", mode, goroutines, each))
		if stopped {
			done <- struct{}{}
			<-done
			t.Logf("plainapp stopped %d times for 300 ms", stops)
			if stops == 0 {
				t.Skip("the calls ended before plainapp was stopped once")
			}
		}
		if err := exp.end(t, time.Minute); err != nil {
			t.Fatalf("export: %v\n%s", err, exp.stderr.String())
		}
		stderr = exp.stderr.String()
	case "cmd":
		// plainapp serve, started by export with sdtctl's stdin and stdout, here
		// pipes: the calls are made once the export runs, and the export ends before
		// the command, which takes every return delivered (a trace's stop flushes
		// the return rings; a command's exit does not).
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer inW.Close()
		defer outR.Close()
		oldIn, oldOut := os.Stdin, os.Stdout
		os.Stdin, os.Stdout = inR, outW
		t.Setenv("GOMAXPROCS", strconv.Itoa(procs)) // the command's
		exp := runCmd(cmdExport, treeSpec, "--flush-timeout", "20s", "--", plainAppBin(t), "serve")
		out := bufio.NewScanner(outR)
		ready := out.Scan() && out.Text() == "ready"
		os.Stdin, os.Stdout = oldIn, oldOut
		inR.Close()
		outW.Close()
		if !ready {
			close(exp.stop)
			t.Fatalf("export -- plainapp serve: the command did not start:\n%s", exp.stderr.String())
		}
		pid = commandPid(t, "plainapp")
		waitHeld(t, pid, treeSpec+"entry", 1, 1)
		waitHeld(t, pid, treeSpec+"return", 1, 2)
		fmt.Fprintf(inW, "%s %d %d\n", mode, goroutines, each)
		if !out.Scan() || out.Text() != "done" {
			t.Fatalf("plainapp: no answer to %s", mode)
		}
		if err := exp.end(t, time.Minute); err != nil {
			t.Fatalf("export -- plainapp serve: %v\n%s", err, exp.stderr.String())
		}
		stderr = exp.stderr.String()
		if !strings.Contains(stderr, "terminating it") {
			t.Errorf("export -- plainapp serve ended, and did not end its command:\n%s", stderr)
		}
	case "exit":
		t.Setenv("GOMAXPROCS", strconv.Itoa(procs)) // the command's
		exp := runCmd(cmdExport, treeSpec, "--flush-timeout", "20s", "--", plainAppBin(t), mode, strconv.Itoa(goroutines), strconv.Itoa(each))
		select {
		case err := <-exp.done:
			if err != nil {
				t.Fatalf("export -- plainapp %s: %v\n%s", mode, err, exp.stderr.String())
			}
		case <-time.After(time.Minute):
			close(exp.stop)
			t.Fatalf("export -- plainapp %s: still running after a minute\n%s", mode, exp.stderr.String())
		}
		stderr = exp.stderr.String()
		for p := range summaries(t, stderr) {
			pid = p // the command's, the only one
		}
	}
	sum := summaries(t, stderr)[pid]
	t.Log(sum.line)
	spans, _ := col.WaitSpans(30*time.Second, func(s []otelcoltest.Span) bool { return len(s) >= int(sum.spans) })
	f := treeCheck(spans, requests)
	t.Log(f)
	if sum.spans != uint64(5*requests) || sum.processDrops+sum.queueDrops+sum.failed != 0 {
		t.Errorf("summary %s: want %d spans and nothing dropped\nexport's stderr:\n%s", sum.line, 5*requests, stderr)
	}
	for _, w := range f.wrong {
		t.Error(w)
	}
}

// commandPid is the pid of the only gosdt process named name (a command export
// started), waiting for its socket.
func commandPid(t *testing.T, name string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var pids []int
		for _, pid := range candidates() {
			if cl, err := dial(pid); err == nil {
				if cl.hello.Command == name {
					pids = append(pids, pid)
				}
				cl.close()
			}
		}
		if len(pids) == 1 {
			return pids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d gosdt processes named %s after 30 s: %v", len(pids), name, pids)
		}
	}
}
