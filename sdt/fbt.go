package sdt

import (
	"time"
	"unsafe" // and go:linkname

	"github.com/gosdt/gosdt/internal/tracedcopy"
	"github.com/gosdt/gosdt/sdt/internal/bridge"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Function-boundary probes (fbt): `sdtctl toolexec -rules FILE` gives each function a
// rule matches an entry and a return probe, whose generated code calls the runtime
// in sdt/internal/fbtrt. What package sdt keeps of them: the registry's side of their
// definitions (fbtRuntime), their names, and the hooks a program attaches
// by hand (HookFuncs, FuncHook, Call).

// fbtFunc is the function an fbt probe is a boundary of, as sites name it.
type fbtFunc struct {
	module, function string // "example.com/app/store", "store.(*DB).Query"
}

// fbtRuntime is the registry's side of the runtime of generated fbt code. That
// runtime (sdt/internal/fbtrt) pulls it by linkname rather than package sdt setting it
// as it initialises: a program without instrumented functions then links none of it.
//
//go:linkname fbtRuntime
func fbtRuntime() bridge.FuncRuntime {
	return bridge.FuncRuntime{
		Define: defineFunc,
		Admit: func(core unsafe.Pointer, ret uintptr) (unsafe.Pointer, bool) {
			h := head{core: (*probe)(core)}
			_, s, ok := h.admit(ret)
			if !ok {
				return nil, false
			}
			rt.ProcUnpin()
			return unsafe.Pointer(s), true
		},
		Consumers: func(core unsafe.Pointer) unsafe.Pointer { return unsafe.Pointer((*probe)(core).cons.Load()) },
		Emit: func(cons, s unsafe.Pointer, ret uintptr, a *bridge.Args) {
			(*consumers)(cons).emitPin((*site)(s), ret, a)
		},
		NewCall:    func(call any) any { return &Call{c: call.(callState)} },
		Warn:       warnf,
		CoreOffset: coreOffset,
	}
}

// defineFunc registers one fbt probe (bridge.FuncRuntime.Define).
func defineFunc(provider, usdt, module, function, which string, args, types []string, kinds []bridge.Kind) (uint8, unsafe.Pointer) {
	targs := make([]argT, len(types))
	for i, t := range types {
		targs[i] = argT{name: t, kind: kinds[i]}
	}
	h := defineIn(provider, which, args, targs, module, &fbtFunc{module, function}, provider+":"+usdt)
	return h.on, unsafe.Pointer(h.core)
}

// nameSites names the sites just bound to their definitions after the function the
// user wrote: an fbt probe's sites after its instrumented function (the gates are in
// it; the traced copy and the copy's deferred check hold the rest), and every site in
// a traced copy, of any probe, after the function copied (tracedcopy.Rename). A
// hand-written probe in an instrumented function then has one name whether its
// function ran as written (its fbt probes off) or as the copy (one on): a spec
// matches the same sites whatever is enabled, and List shows the probe once. The
// copies are learnt from the fbt probes' own sites in them, which may be bound after
// another probe's site in the same copy (its definition's package ran its init
// earlier): learning a copy names again the sites bound before. Call with r.mu held.
func (r *registry) nameSites(bound []*site) {
	learnt := false
	for _, s := range bound {
		if d := s.probe.fn; d != nil {
			if id, _, ok := tracedcopy.Split(s.Func); ok && r.copies[s.Module+"."+id] == nil {
				r.copies[s.Module+"."+id] = d
				learnt = true
			}
		}
	}
	if learnt {
		bound = r.sites // bound or not: an unbound site is named when it is bound
	}
	for _, s := range bound {
		if s.probe == nil {
			continue
		}
		if d := s.probe.fn; d != nil {
			s.Module, s.Func = d.module, d.function
		} else if id, rest, ok := tracedcopy.Split(s.Func); ok {
			if d := r.copies[s.Module+"."+id]; d != nil {
				s.Module, s.Func = d.module, tracedcopy.Rename(d.function, rest)
			}
		}
	}
}

// Call is one call of an instrumented function, as its hooks see it. A hook must not
// keep it after it returns.
type Call struct{ c callState }

// callState is a call as the runtime of generated code keeps it.
type callState interface {
	Func() string
	Recv() any
	Args() []any
	SkipCall(results ...any)
	Results() []any
	SetResult(i int, v any)
	Latency() time.Duration
	Panicking() bool
	Skipped() bool
}

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
	sp, err := parseListSpec(spec)
	if err != nil {
		return nil, 0, err
	}
	if bridge.Hooks == nil {
		return func() {}, 0, ErrNoMatch // no function of this program is instrumented
	}
	detach, n = bridge.Hooks(func(module, function string) bool {
		return sp.Match("fbt", module, function, "") || sp.Match("fbt", module, function, "entry") ||
			sp.Match("fbt", module, function, "return")
	}, order, h)
	if n == 0 {
		return func() {}, 0, ErrNoMatch
	}
	return detach, n, nil
}
