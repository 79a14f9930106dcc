//go:build linux

package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/otelcoltest"
	"github.com/gosdt/gosdt/internal/testutil"
)

// TestRuntimeProbeReturnRefusedSaid: trace, stat and export of a function whose entry
// takes a run-time probe and whose return does not (store.Forever, which never
// returns) say so on stderr with the reason; of one whose returns take a probe
// (store.Get) they say nothing.
func TestRuntimeProbeReturnRefusedSaid(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and a program")
	}
	col := otelcoltest.Start(t)
	exportEnv(t, col, "grpc")
	a := startPlainApp(t)
	p := strconv.Itoa(a.pid)
	spec := storeSpec + "store.Forever:"
	ret, ok := listed(t, a.pid, spec)[spec+"return"]
	if !ok {
		t.Fatalf("list %s: no return probe", spec)
	}
	if !allRefused(ret.Sites) {
		t.Fatalf("store.Forever's return takes a probe (%+v): the test wants one that does not", ret.Sites)
	}
	want := spec + "return takes no probe (its entry does): "
	said := func(what, stderr string) {
		t.Helper()
		if !strings.Contains(stderr, want) {
			t.Errorf("%s: does not say %q; stderr:\n%s", what, want, stderr)
		}
		if !strings.Contains(stderr, "never returns") {
			t.Errorf("%s: the note gives no reason; stderr:\n%s", what, stderr)
		}
	}
	for _, args := range [][]string{
		{"trace", "-p", p, spec, "-d", "200ms"},
		{"stat", "-p", p, spec, "-d", "200ms"},
	} {
		var out, errb syncBuffer
		if err := run(args, &out, &errb); err != nil {
			t.Fatalf("sdtctl %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		said(args[0], errb.String())
	}
	// A function whose returns take a probe: nothing said of them.
	get := storeSpec + "store.(*DB).Get:"
	var getOut, getErr syncBuffer
	if err := run([]string{"trace", "-p", p, get, "-d", "200ms"}, &getOut, &getErr); err != nil {
		t.Fatalf("sdtctl trace %s: %v\n%s", get, err, getErr.String())
	}
	if strings.Contains(getErr.String(), "takes no probe") {
		t.Errorf("trace of %s says a return takes no probe:\n%s", get, getErr.String())
	}
	// Export asks for no latency histogram of a return that takes no probe.
	exp := runCmd(cmdExport, "-p", p, spec, "--flush-timeout", "2s")
	waitHeld(t, a.pid, spec+"entry", 1, 0)
	if err := exp.end(t, time.Minute); err != nil {
		t.Fatalf("export: %v\n%s", err, exp.stderr.String())
	}
	said("export", exp.stderr.String())

	if testutil.Emulated() {
		return // sdtctl would exec the emulated command itself (TestRuntimeProbeFollow)
	}
	stdinFrom(t, "sleep 500\nrun 10\nsleep 100\n") // the command keeps sdtctl's stdin
	var out, errb syncBuffer
	if err := run([]string{"trace", spec, "--", plainAppBin(t), "serve"}, &out, &errb); err != nil {
		t.Fatalf("trace -- plainapp: %v\n%s", err, errb.String())
	}
	said("trace -- CMD", errb.String())
}
