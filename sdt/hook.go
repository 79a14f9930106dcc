package sdt

import (
	"time"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// Function-boundary probes (fbt): `sdtctl toolexec -rules FILE` gives each function a
// rule matches an entry and a return probe (sdt/internal/fbtrt is the runtime of the
// code it generates). What a program attaches to them by hand: HookFuncs, FuncHook,
// Call.

// Call is one call of an instrumented function, as its hooks see it. A hook must not
// keep it after it returns.
type Call struct{ c registry.CallState }

// Func is the instrumented function's full name, pkg/path.(*T).M.
func (c *Call) Func() string { return c.c.Func() }

// Recv is the receiver of a method; nil for a function.
func (c *Call) Recv() any { return c.c.Recv() }

// Args are the parameters (not the receiver).
func (c *Call) Args() []any { return c.c.Args() }

// SkipCall makes the call return at once, with results (their number and types must
// be the function's; missing ones are zero). Inner hooks do not run.
func (c *Call) SkipCall(results ...any) { c.c.SkipCall(results...) }

// Results are the results the call returns (at exit).
func (c *Call) Results() []any { return c.c.Results() }

// SetResult changes result i of the call (at exit).
func (c *Call) SetResult(i int, v any) { c.c.SetResult(i, v) }

// Latency is the time since the call began (at exit: its duration).
func (c *Call) Latency() time.Duration { return c.c.Latency() }

// Panicking reports whether the call is leaving by panic (or runtime.Goexit): it
// reached none of its return statements. The panic value is not recovered.
func (c *Call) Panicking() bool { return c.c.Panicking() }

// Skipped reports whether an entry hook skipped the call.
func (c *Call) Skipped() bool { return c.c.Skipped() }

// FuncHook is a pair of in-process hooks on instrumented functions. Enter runs when
// the entry probe fires, Exit when the return probe does: hooks run only while their
// probes are enabled.
type FuncHook struct {
	Enter func(*Call)
	Exit  func(*Call)
}

// HookFuncs attaches h to the functions spec matches (provider fbt; the name field is
// ignored: h sees both boundaries). Hooks of one function run in order, lowest first
// (outermost): their Enter in that order, their Exit in the reverse one; hooks of equal
// order run in the order they were attached. A hook runs for the calls that begin
// after it is attached. It returns how many functions matched.
func HookFuncs(spec string, order int, h FuncHook) (detach func(), n int, err error) {
	return registry.HookFuncs(spec, order, hookFunc(h.Enter), hookFunc(h.Exit))
}

// hookFunc is f as the registry keeps it: given the call as fbt's runtime keeps it,
// shown to f through the Call made once per call (its View).
func hookFunc(f func(*Call)) func(registry.CallState) {
	if f == nil {
		return nil
	}
	return func(cs registry.CallState) {
		v := cs.View()
		c, _ := (*v).(*Call)
		if c == nil {
			c = &Call{c: cs}
			*v = c
		}
		f(c)
	}
}
