package control_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var stackProbe = sdt.Define1[int]("stacktest", "leaf", "depth")

// A known call chain: stackOuter calls stackMiddle calls stackLeaf, which fires.
//
//go:noinline
func stackLeaf(i int) { sdt.Probe1(&stackProbe, i) }

//go:noinline
func stackMiddle(i int) { stackLeaf(i + 1) }

//go:noinline
func stackOuter(i int) { stackMiddle(i + 1) }

// inlinedMiddle is inlined into stackInlined: its frame is still named.
func inlinedMiddle(i int) { stackLeaf(i + 1) }

//go:noinline
func stackInlined(i int) { inlinedMiddle(i + 1) }

// chain is the first n function names of pcs, as runtime.CallersFrames names them.
func chain(pcs []uintptr, n int) []string {
	var names []string
	frames := runtime.CallersFrames(pcs)
	for len(names) < n {
		f, more := frames.Next()
		names = append(names, strings.TrimPrefix(f.Function, "github.com/gosdt/gosdt/sdt/control_test."))
		if !more {
			break
		}
	}
	return names
}

// TestTraceStack: with TraceOptions.Stack each event carries the call stack of its
// fire, innermost first, from the function that fired, inlined callers included,
// at most Stack deep.
func TestTraceStack(t *testing.T) {
	const spec = "stacktest:::leaf"
	needSwitchable(t, spec)
	for _, c := range []struct {
		fire  func(int)
		depth int
		want  []string
	}{
		{stackOuter, control.MaxStack, []string{"stackLeaf", "stackMiddle", "stackOuter", "TestTraceStack"}},
		{stackInlined, control.MaxStack, []string{"stackLeaf", "inlinedMiddle", "stackInlined", "TestTraceStack"}},
		{stackOuter, 2, []string{"stackLeaf", "stackMiddle"}},
	} {
		tr, err := control.OpenTrace(spec, control.TraceOptions{Stack: c.depth})
		if err != nil {
			t.Fatal(err)
		}
		c.fire(0)
		ev := readN(t, tr, 1)[0]
		tr.Close()
		if got := chain(ev.Stack, len(c.want)); strings.Join(got, " ") != strings.Join(c.want, " ") || len(ev.Stack) > c.depth {
			t.Errorf("stack %q (%d deep), want %q, at most %d deep", got, len(ev.Stack), c.want, c.depth)
		}
	}
	tr, err := control.OpenTrace(spec, control.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stackOuter(0)
	if ev := readN(t, tr, 1)[0]; ev.Stack != nil {
		t.Errorf("a trace without stacks recorded %d return addresses", len(ev.Stack))
	}
	tr.Close()
	if _, err := control.OpenTrace(spec, control.TraceOptions{Stack: control.MaxStack + 1}); err == nil {
		t.Error("a stack deeper than MaxStack was not refused")
	}
}

// TestStreamStack: a trace stream names its stacks' frames for the client (the
// process symbolizes them: sdtctl trace --stack).
func TestStreamStack(t *testing.T) {
	const spec = "stacktest:::leaf"
	needSwitchable(t, spec)
	firing(t, stackOuter)
	cl := newClient(t)
	cl.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec, Stack: ctlproto.StackDepth, Count: 3})
	cl.expect(ctlproto.KindStarted)
	for _, ev := range cl.events(3) {
		if len(ev.Stack) < 4 {
			t.Fatalf("stack %q: want stackLeaf, stackMiddle, stackOuter, firing's func", ev.Stack)
		}
		for i, fn := range []string{"stackLeaf", "stackMiddle", "stackOuter"} {
			if !strings.HasPrefix(ev.Stack[i], "github.com/gosdt/gosdt/sdt/control_test."+fn+" ") ||
				!strings.Contains(ev.Stack[i], "stack_test.go:") {
				t.Errorf("frame %d %q, want control_test.%s in stack_test.go", i, ev.Stack[i], fn)
			}
		}
	}
}
