package control_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/control"
)

// TestTraceWhereNoSpace: fires the predicate rejects take no room in the buffers: a
// 4 KiB buffer nobody reads counts 100,000 of them filtered and drops none, and
// still holds the few that match.
func TestTraceWhereNoSpace(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	tr, err := control.OpenTrace(spec, control.TraceOptions{BufSize: control.MinBufSize, Where: `n < 10 && s != "x"`})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const rejected = 100000
	for i := range rejected {
		acctSite(10+i, "")
	}
	for i := range 10 {
		acctSite(i, "")
	}
	if f, d := tr.Filtered(), tr.Drops(); f != rejected || d != 0 {
		t.Fatalf("%d filtered and %d dropped, want %d and 0", f, d, rejected)
	}
	for i, ev := range readN(t, tr, 10) {
		if ev.Args[0].Value != int64(i) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
}

// TestTraceWhereAccounting: with 1, 2 and 8 goroutines firing and a reader taking
// the events, fired = read + dropped + filtered, and only matching fires are read.
func TestTraceWhereAccounting(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	each := 20000
	if testing.Short() {
		each = 4000
	}
	for _, g := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("goroutines=%d", g), func(t *testing.T) {
			// acctSite's string is "abcdefghij"[:i%11]: the predicate keeps 4 fires in 11.
			tr, err := control.OpenTrace(spec, control.TraceOptions{BufSize: 16 << 10, Where: `s >= "abcdefg"`})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			read := 0
			take := func(r *control.Record) bool {
				if s := string(r.Bytes(1)); s < "abcdefg" {
					t.Errorf("read %q, which the predicate rejects", s)
				}
				read++
				return true
			}
			readWhile(t, tr, func() { fireFrom(g, each) }, take)
			fired, dropped, filtered := uint64(g*each), tr.Drops(), tr.Filtered()
			if uint64(read)+dropped+filtered != fired {
				t.Fatalf("%d fired, %d read + %d dropped + %d filtered", fired, read, dropped, filtered)
			}
			if want := uint64(g * (each - each/11*4 - max(each%11-7, 0))); filtered != want {
				t.Errorf("%d filtered, want %d", filtered, want)
			}
			t.Logf("%d fired: %d read, %d dropped, %d filtered", fired, read, dropped, filtered)
		})
	}
}

// TestWhereErrors: a predicate that does not compile for a probe matched is refused
// with where and why, naming the probe, and switches nothing on; one that no probe
// could take (its syntax) names none; over the socket the message shows the
// expression with a caret under the position.
func TestWhereErrors(t *testing.T) {
	const spec = "accttest:::fire"
	const probe = "accttest:github.com/gosdt/gosdt/sdt/control_test::fire"
	needSwitchable(t, spec)
	for _, c := range []struct {
		expr  string
		pos   int
		msg   string
		probe string
	}{
		{`n > 1 && latency_ns > 5`, 9, "latency_ns", probe},
		{`n >`, 3, "expected an argument", ""},
		{`s > 5`, 4, "string", probe},
		{`(n == 1`, 0, "unbalanced", ""},
	} {
		_, err := control.OpenTrace(spec, control.TraceOptions{Where: c.expr})
		var pe *control.PredicateError
		if !errors.As(err, &pe) || pe.Pos != c.pos || !strings.Contains(pe.Msg, c.msg) || pe.Probe != c.probe {
			t.Errorf("%q: %v (%+v), want a PredicateError at %d naming %q", c.expr, err, pe, c.pos, c.msg)
			continue
		}
		if _, err := control.OpenAggregation(spec, control.AggOptions{Where: c.expr}); !errors.As(err, &pe) {
			t.Errorf("aggregation %q: %v, want a PredicateError", c.expr, err)
		}
		t.Logf("%q:\n%v\n%s", c.expr, err, pe.Caret())
	}
	if acctProbe.Enabled() {
		t.Fatal("a refused predicate switched its probe on")
	}
	cl := newClient(t)
	cl.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec, Where: `n > 1 && nope`})
	r := cl.read()
	if r.Kind != ctlproto.KindError || r.Code != ctlproto.CodeBadRequest ||
		!strings.Contains(r.Message, "col 10") || !strings.Contains(r.Message, "\n  n > 1 && nope\n           ^") {
		t.Fatalf("%+v, want a badrequest with the expression and a caret at col 10", r)
	}
}

// TestAggWhere: an aggregation folds only the fires its predicate accepts.
func TestAggWhere(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	agg, err := control.OpenAggregation(spec, control.AggOptions{By: "s", Value: "n", Where: `n >= 100 && s == "ab"`})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	fireFrom(1, 1100) // s == "ab" at n = 2, 13, 24, ...: 90 of them from 101 up
	rows := agg.Snapshot().Rows
	if len(rows) != 1 || rows[0].Key != "ab" || rows[0].Count != 91 || rows[0].Min != 101 {
		t.Fatalf("rows %+v, want one: ab, 91 fires from n = 101", rows)
	}
}
