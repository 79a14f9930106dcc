//go:build linux

package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
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
// and 8, with -p.
func TestExportRuntimeTrees(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and programs")
	}
	needDWARF(t)
	for _, c := range []struct {
		mode  string
		procs int
	}{{"tree", 1}, {"tree", 2}, {"tree", 8}, {"http", 1}, {"http", 2}, {"http", 8}} {
		mode, procs := c.mode, c.procs
		t.Run(mode+"/GOMAXPROCS="+strconv.Itoa(procs), func(t *testing.T) {
			goroutines, each := 8, 100
			if v := os.Getenv("TREE_EACH"); v != "" {
				each, _ = strconv.Atoi(v)
			}
			col := otelcoltest.Start(t)
			exportEnv(t, col, "grpc")
			// The calls come in a burst, faster than one collector takes their spans.
			t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", strconv.Itoa(10*goroutines*each))
			a := startPlainApp(t, "GOMAXPROCS="+strconv.Itoa(procs))
			exp := runCmd(cmdExport, "-p", strconv.Itoa(a.pid), treeSpec, "--flush-timeout", "20s")
			waitHeld(t, a.pid, treeSpec+"entry", 1, 1)
			waitHeld(t, a.pid, treeSpec+"return", 1, 2)
			a.do(t, fmt.Sprintf("%s %d %d", mode, goroutines, each))
			if err := exp.end(t, time.Minute); err != nil {
				t.Fatalf("export: %v\n%s", err, exp.stderr.String())
			}
			sum := summaries(t, exp.stderr.String())[a.pid]
			t.Log(sum.line)
			requests := goroutines * each
			spans, _ := col.WaitSpans(30*time.Second, func(s []otelcoltest.Span) bool { return len(s) >= int(sum.spans) })
			f := treeCheck(spans, requests)
			t.Log(f)
			if sum.spans != uint64(5*requests) || sum.processDrops+sum.queueDrops+sum.failed != 0 {
				t.Errorf("summary %s: want %d spans and nothing dropped", sum.line, 5*requests)
			}
			for _, w := range f.wrong {
				t.Error(w)
			}
		})
	}
}
