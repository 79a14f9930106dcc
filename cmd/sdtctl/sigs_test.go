//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/otelcoltest"
	"github.com/gosdt/gosdt/internal/testutil"
)

// export that places run-time probes first names their arguments from the
// executable's DWARF, as trace -p does: the span carries gosdt.arg.ms, not the
// register word gosdt.arg.arg0.
func TestRuntimeArgsExportFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and a program")
	}
	needDWARF(t)
	col := otelcoltest.Start(t)
	exportEnv(t, col, "http/protobuf")
	a := startPlainApp(t)
	exp := runCmd(cmdExport, "-p", strconv.Itoa(a.pid), storeSpec+"store.Sleep:", "--flush-timeout", "20s")
	waitHeld(t, a.pid, storeSpec+"store.Sleep:entry", 1, 1)
	a.do(t, "sleep 7")
	if err := exp.end(t, time.Minute); err != nil {
		t.Fatalf("export: %v\n%s", err, exp.stderr.String())
	}
	spans, ok := col.WaitSpans(30*time.Second, func(s []otelcoltest.Span) bool { return len(s) >= 1 })
	if !ok || len(spans) != 1 {
		t.Fatalf("the collector has %d spans, want 1: %+v", len(spans), spans)
	}
	if got := spans[0].Attrs["gosdt.arg.ms"]; got != int64(7) {
		t.Fatalf("span of Sleep(7): gosdt.arg.ms = %v (%T), want 7: attributes %v", got, got, spans[0].Attrs)
	}
	if _, ok := spans[0].Attrs["gosdt.arg.arg0"]; ok {
		t.Fatalf("span of Sleep(7) carries a register word: %v", spans[0].Attrs)
	}
}

// trace and stat -- CMD place run-time probes first too: their arguments have the
// names and types of the function's signature.
func TestRuntimeArgsFollowFirst(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("under an emulator: sdtctl would exec the emulated command itself")
	}
	needDWARF(t)
	bin := plainAppBin(t)
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, []byte("sleep 500\nsleep 3\nsleep 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withStdin := func(f func()) {
		fin, err := os.Open(in)
		if err != nil {
			t.Fatal(err)
		}
		defer fin.Close()
		old := os.Stdin
		os.Stdin = fin // the command keeps sdtctl's stdin
		defer func() { os.Stdin = old }()
		f()
	}
	withStdin(func() {
		var out, errb syncBuffer
		if err := run([]string{"trace", storeSpec + "Sleep:entry", "--json", "--", bin, "serve"}, &out, &errb); err != nil {
			t.Fatalf("trace -- plainapp: %v\n%s", err, errb.String())
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !strings.Contains(line, `"event"`) {
				continue
			}
			var m struct{ Event *event }
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%v: %q", err, line)
			}
			// sdtctl places the probe once it has connected: during the first call, or before
			switch got := strings.Join(m.Event.args(), ", "); got {
			case "ms int 3", "ms int 4":
				n++
			case "ms int 500":
			default:
				t.Fatalf("Sleep's entry: %q, want ms int 3 or 4\n%s", got, errb.String())
			}
		}
		if n != 2 {
			t.Fatalf("%d events, want 2\n%s\n%s", n, out.String(), errb.String())
		}
	})
	withStdin(func() {
		var out, errb syncBuffer
		if err := run([]string{"stat", "-i", "10s", storeSpec + "Sleep:entry", "--by", "ms", "--json", "--", bin, "serve"}, &out, &errb); err != nil {
			t.Fatalf("stat --by ms -- plainapp: %v\n%s", err, errb.String())
		}
		// --by names the argument: a probe placed with words has no argument ms, and the
		// stat would be refused. (What the command fires after the last snapshot before
		// its exit is not in any.)
		if o := out.String(); !strings.Contains(o, `"by":"ms"`) || !strings.Contains(o, `{"key":"500","count":1}`) {
			t.Fatalf("stat --by ms: no row of ms 500 in\n%s\n%s", out.String(), errb.String())
		}
	})
}
