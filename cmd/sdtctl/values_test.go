//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jsonEvent is an event as trace --json prints it: values typed.
type jsonEvent struct {
	Time      time.Time
	Probe     string
	Site      uint64
	Goroutine uint64
	Args      []struct {
		Name, Type string
		Value      any
		Cut        bool
	}
	Stack []string
}

// arg is the value of the argument named name.
func (e *jsonEvent) arg(t *testing.T, name string) any {
	t.Helper()
	for _, a := range e.Args {
		if a.Name == name {
			return a.Value
		}
	}
	t.Fatalf("%s: no argument %s in %+v", e.Probe, name, e.Args)
	return nil
}

// traceDuring traces spec in a's process until count events, while the app runs
// cmds, and returns what trace printed on stdout and stderr.
func traceDuring(t *testing.T, a *app, spec string, count int, cmds []string, args ...string) (string, string) {
	t.Helper()
	pid := strconv.Itoa(a.pid)
	r := runCmd(cmdTrace, append([]string{"-p", pid, spec, "-c", strconv.Itoa(count)}, args...)...)
	waitHeld(t, a.pid, spec, 1, 0)
	for _, c := range cmds {
		a.do(t, c)
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("trace %s: %v\n%s", spec, err, r.stderr.String())
		}
	case <-time.After(60 * time.Second):
		r.end(t, 10*time.Second)
		t.Fatalf("trace %s: not %d events in 60 s:\n%s", spec, count, r.stdout.String())
	}
	return r.stdout.String(), r.stderr.String()
}

// jsonEvents decodes trace --json's events, numbers as json.Number: exact.
func jsonEvents(t *testing.T, out string) []*jsonEvent {
	t.Helper()
	var evs []*jsonEvent
	d := json.NewDecoder(strings.NewReader(out))
	d.UseNumber()
	for d.More() {
		var rec struct{ Event *jsonEvent }
		if err := d.Decode(&rec); err != nil {
			t.Fatalf("%v in\n%s", err, out)
		}
		if rec.Event != nil {
			evs = append(evs, rec.Event)
		}
	}
	return evs
}

var hexPointer = regexp.MustCompile(`^0x[0-9a-f]+$`)

// TestValues: trace --json types every value: integers as JSON numbers with every
// digit (int64 and uint64 extremes, beyond 2^53, exact through a JSON parser that
// keeps numbers), bools as true/false in every event of a probe (fbt's panicking was
// "0" in a return probe with an error result and "false" in the others), pointers as
// "0x..." strings, an error as its text or null. Text output follows the same rules.
func TestValues(t *testing.T) {
	a := startApp(t, nil, "serve")

	out, _ := traceDuring(t, a, "fbt::Extremes:", 4, []string{"extremes"}, "--json")
	evs := jsonEvents(t, out)
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4:\n%s", len(evs), out)
	}
	want := [][2]string{{"-9223372036854775808", "18446744073709551615"}, {"9223372036854775807", "9007199254740993"}}
	for i, w := range want {
		in, ret := evs[2*i], evs[2*i+1]
		for _, v := range []struct {
			e          *jsonEvent
			name, want string
		}{{in, "i", w[0]}, {in, "u", w[1]}, {ret, "r0", w[0]}, {ret, "r1", w[1]}} {
			n, ok := v.e.arg(t, v.name).(json.Number)
			if !ok || string(n) != v.want {
				t.Errorf("%s %s = %#v, want the JSON number %s", v.e.Probe, v.name, v.e.arg(t, v.name), v.want)
			}
		}
		if x, err := strconv.ParseUint(string(in.arg(t, "u").(json.Number)), 10, 64); err != nil || strconv.FormatUint(x, 10) != w[1] {
			t.Errorf("u %v does not read back as the uint64 %s: %v", in.arg(t, "u"), w[1], err)
		}
		if in.arg(t, "ok") != true || ret.arg(t, "panicking") != false {
			t.Errorf("ok %#v, panicking %#v: want the JSON bools true and false", in.arg(t, "ok"), ret.arg(t, "panicking"))
		}
		if _, ok := ret.arg(t, "latency_ns").(json.Number); !ok {
			t.Errorf("latency_ns %#v: want a JSON number", ret.arg(t, "latency_ns"))
		}
	}

	// (*Store).Put returns an error (its return probe's kinds come from its first
	// fire), (*Cache).Put a bool (its kinds known from its types).
	out, stderr := traceDuring(t, a, "fbt::Put:", 8, []string{"put 3", "put -2"}, "--json")
	evs = jsonEvents(t, out)
	var errs []any
	for _, e := range evs {
		if strings.HasSuffix(e.Probe, ":entry") {
			if p, ok := e.arg(t, "this").(string); !ok || !hexPointer.MatchString(p) {
				t.Errorf("%s this = %#v, want a pointer as \"0x...\"", e.Probe, e.arg(t, "this"))
			}
			if k, ok := e.arg(t, "key").(string); !ok || !strings.HasPrefix(k, "key-") {
				t.Errorf("%s key = %#v, want a string", e.Probe, e.arg(t, "key"))
			}
			continue
		}
		if p := e.arg(t, "panicking"); p != false {
			t.Errorf("%s panicking = %#v, want false", e.Probe, p)
		}
		if strings.Contains(e.Probe, "(*Store).Put") {
			errs = append(errs, e.arg(t, "r0"))
		}
	}
	if len(evs) != 8 || len(errs) != 2 || errs[0] != nil || errs[1] != "negative n -2" {
		t.Errorf("%d events, (*Store).Put's errors %#v: want 8 events, errors null and \"negative n -2\"\n%s", len(evs), errs, out)
	}
	// Put alone matches both methods, and trace says so.
	if !strings.Contains(stderr, `function "Put" matches 2 functions: example.com/otelapp/app:app.(*Cache).Put, example.com/otelapp/app:app.(*Store).Put`) {
		t.Errorf("trace fbt::Put: did not say Put matches two functions; stderr:\n%s", stderr)
	}

	out, _ = traceDuring(t, a, "fbt::Put:", 8, []string{"put 3", "put -2"})
	for _, w := range []*regexp.Regexp{
		regexp.MustCompile(`app\.\(\*Store\)\.Put:entry this=0x[0-9a-f]+ key="key-3" n=3\n`),
		regexp.MustCompile(`app\.\(\*Store\)\.Put:return latency_ns=\d+ panicking=false r0=nil\n`),
		regexp.MustCompile(`app\.\(\*Store\)\.Put:return latency_ns=\d+ panicking=false r0="negative n -2"\n`),
		regexp.MustCompile(`app\.\(\*Cache\)\.Put:return latency_ns=\d+ panicking=false r0=true\n`),
	} {
		if !w.MatchString(out) {
			t.Errorf("trace (text) has no line matching %s:\n%s", w, out)
		}
	}
}

// TestFunctionNames: a spec's function field matches a function as people write it:
// in full (app.(*Store).Put), without its package ((*Store).Put), or by its last part
// (Put: both methods of that name).
func TestFunctionNames(t *testing.T) {
	a := startApp(t, nil, "serve")
	pid := strconv.Itoa(a.pid)
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"fbt::app.(*Store).Put:entry", []string{"app.(*Store).Put"}},
		{"fbt::(*Store).Put:entry", []string{"app.(*Store).Put"}},
		{"fbt::Put:entry", []string{"app.(*Cache).Put", "app.(*Store).Put"}},
		{"fbt:example.com/otelapp/app:Handle:return", []string{"app.Handle"}},
	} {
		out, err := sdtctl(t, "list", "-p", pid, c.spec, "--json")
		if err != nil {
			t.Errorf("list %s: %v", c.spec, err)
			continue
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m struct{ Probe struct{ Name string } }
			json.Unmarshal([]byte(line), &m)
			got = append(got, strings.Split(m.Probe.Name, ":")[2])
		}
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("list %s: functions %q, want %q", c.spec, got, c.want)
		}
	}
	// enable says what a bare name matched
	var stdout, stderr bytes.Buffer
	if err := run([]string{"enable", "-p", pid, "fbt::Put:entry"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	run([]string{"disable", "-p", pid, "fbt::Put:entry"}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), `function "Put" matches 2 functions`) {
		t.Errorf("enable fbt::Put:entry: stderr %q, want it to name the two functions", stderr.String())
	}
	if _, err := sdtctl(t, "list", "-p", pid, "fbt::Store).Put:entry"); exitCode(err) != exitNoMatch {
		t.Errorf("list fbt::Store).Put:entry: %v, want no match", err)
	}
}

// TestWhereLeavesOut: a --where naming an argument only some matched probes have
// leaves the others out, as --by does, and both say which on stderr; when no probe has
// it, both refuse.
func TestWhereLeavesOut(t *testing.T) {
	a := startApp(t, nil, "serve")
	out, stderr := traceDuring(t, a, "fbt::Put:", 2, []string{"put 3", "put 4"}, "--where", "n == 4")
	if strings.Count(out, ":entry ") != 2 || strings.Contains(out, ":return ") || !strings.Contains(out, "n=4") || strings.Contains(out, "n=3") {
		t.Errorf("trace fbt::Put: --where 'n == 4': want the two entries with n=4:\n%s", out)
	}
	if !strings.Contains(stderr, "--where: 2 of 4 probes have no argument n, left out: ") ||
		!strings.Contains(stderr, "app.(*Store).Put:return") {
		t.Errorf("trace --where did not say what it left out; stderr:\n%s", stderr)
	}
	pid := strconv.Itoa(a.pid)
	var sout, serr syncBuffer
	if err := run([]string{"stat", "-p", pid, "fbt::Put:", "--by", "key", "-d", "300ms", "-i", "100ms"}, &sout, &serr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(serr.String(), "--by/--value: 2 of 4 probes have no argument key, left out: ") {
		t.Errorf("stat --by key did not say what it left out; stderr:\n%s", serr.String())
	}
	for _, args := range [][]string{
		{"trace", "-p", pid, "fbt::Put:", "--where", "nope == 1", "-d", "300ms"},
		{"stat", "-p", pid, "fbt::Put:", "--by", "nope", "-d", "300ms"},
	} {
		if _, err := sdtctl(t, args...); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "nope") {
			t.Errorf("sdtctl %v: %v, want a usage error naming nope", args, err)
		}
	}
}

// TestOfflineNamesLive: list BINARY names an instrumented binary's probes as the live
// process lists them (fbt's entry and return, not their USDT names).
func TestOfflineNamesLive(t *testing.T) {
	a := startApp(t, nil, "serve")
	names := func(args ...string) []string {
		out, err := sdtctl(t, append(args, "--json")...)
		if err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m struct {
				Probe json.RawMessage
			}
			json.Unmarshal([]byte(line), &m)
			var live struct{ Name string }
			var name string
			if json.Unmarshal(m.Probe, &live) == nil && live.Name != "" {
				name = live.Name
			} else {
				json.Unmarshal(m.Probe, &name)
			}
			ns = append(ns, name)
		}
		slices.Sort(ns)
		return ns
	}
	live := names("list", "-p", strconv.Itoa(a.pid), "fbt:::")
	offline := names("list", otelAppBin(t), "fbt:::")
	if len(live) == 0 || !slices.Equal(live, offline) {
		t.Errorf("list BINARY fbt::: names\n%q\nthe live list\n%q", offline, live)
	}
}
