// Package fbtrt is the runtime of the code that `sdtctl toolexec -rules` generates
// (package internal/fbt): function-boundary probe definitions, calls and their values.
// Generated code imports it through the import configuration, as cmd/cover does its
// runtime; nothing else should, and package sdt's API does not carry it.
package fbtrt

import (
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gosdt/gosdt/internal/sealfmt"
	// Generated code's programs have the control plane, which package sdt starts.
	_ "github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/internal/registry"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Function-boundary probes (fbt) are written by `sdtctl toolexec -rules FILE`, not by
// hand: every function a rule matches gets, in its own body,
//
//	entry:   if ent.Enabled() { return traced(args) }     // guard sites
//	         if ret.Enabled() { return traced(args) }
//	traced:  c := ret.Begin(&cv)                            // the Call, in its frame
//	         if ent.Enabled() { ent.Enter(c, n, ints...) }  // fbt:pkg:fn:entry
//	returns: if l := c.Elapsed(); ret.Enabled() { ... ret.Return(c, l) ... }  // fbt:pkg:fn:return
//
// where traced is a copy of the function's body (internal/fbt says how it is made).
// Each check is an ordinary site: sealed, one jump while off. The probes are named
// fbt:<package path>:<function>:entry and :return, the function as the other probes
// name it (pkg.(*T).M). entry's arguments are the receiver and the parameters, return's
// are latency_ns, panicking and the results: values of Arg kinds by value, pointers
// (and maps, chans, funcs) by address, an error by its text ("<nil>" when nil), a
// context.Context by what sdt/otelsdt says of it when imported, anything else by its
// type's name. At most MaxArgs are carried; hooks see them all.
//
// A return fires only for a call that began while the return probe was on: a call in
// flight when it is switched on has no start time, and no bogus latency is reported.
// Likewise a call that began while its return probe had no consumer and no hooks (then
// no clock is read: a probe fired only into its hit count costs no clock read) is
// counted but not delivered to a consumer or hook attached while it ran.

// MaxArgs is the most arguments a probe carries (sdt.MaxArgs).
const MaxArgs = registry.MaxArgs

// Func is the entry or the return probe of an instrumented function, defined by
// DefineFunc in the generated code. It starts with the registry's head, as package
// sdt's probe definitions do (the flag byte, then the descriptor), so that discovery
// binds its sites as any others' (TestLayout checks it).
type Func struct {
	h  registry.Head // its flag byte, read by sites, written only by the registry
	fn *funcDesc
}

// funcDesc is what the entry and return probes of one function share: its name and
// its hooks (the registry's record of the function).
type funcDesc struct {
	module, function string // as sites name them: "example.com/app/store", "store.(*DB).Query"
	recv             bool   // the entry's first argument is the receiver
	reg              *registry.FbtFunc
	usdt             int // the return probe's USDT semaphore slot in a sealed binary, 0 if none
}

// funcs is every instrumented function, by module + "." + function.
var funcs struct {
	sync.Mutex
	byName map[string]*funcDesc
}

// DefineFunc defines one of the two fbt probes of a function (which is "entry" or
// "return"). usdt is the probe's USDT name in a sealed binary (sdtctl seal), one per
// function and boundary so that bpftrace can attach to one function:
// usdt:BIN:fbt:<usdt>. args and types are newline-separated.
//
//go:noinline
func DefineFunc(provider, usdt, module, function, which, args, types string) Func {
	var names, ts []string
	if args != "" {
		names, ts = strings.Split(args, "\n"), strings.Split(types, "\n")
	}
	if len(names) > MaxArgs {
		names, ts = names[:MaxArgs], ts[:MaxArgs]
	}
	kinds := make([]registry.Kind, len(ts))
	for i, t := range ts {
		kinds[i] = kindOfName(t)
	}
	rf := registry.FuncNamed(module, function)

	funcs.Lock()
	defer funcs.Unlock()
	if funcs.byName == nil {
		funcs.byName = map[string]*funcDesc{}
	}
	d := funcs.byName[module+"."+function]
	if d == nil {
		d = &funcDesc{module: module, function: function, reg: rf}
		funcs.byName[module+"."+function] = d
	}
	if which == "entry" {
		// store.(*DB).Get, store.Pair.Sum, store.(*Stack[...]).Pop: methods;
		// store.Fib, store.Map[...]: functions.
		d.recv = strings.Count(strings.ReplaceAll(function, "[...]", ""), ".") > 1
	} else {
		d.usdt = registry.USDTSlot(provider, usdt)
	}
	return Func{h: registry.DefineFunc(provider, usdt, which, rf, names, ts, kinds), fn: d}
}

// Enabled reports whether p is on. Generated code guards every use of p with it.
func (p *Func) Enabled() bool { return p.h.On != 0 }

// NewCall starts a call whose entry probe did not fire, for the return probe p, in a
// recycled Call (Release).
func (p *Func) NewCall() *Call { return newCall(p.fn) }

// Begin starts a call of the function of the return probe p in c, storage the caller
// owns (the traced copy's frame: no allocation, no pool), and returns c. With hooks
// attached it returns a recycled Call instead, whose argument and result slices the
// hooks' calls reuse: the caller must Release what Begin returns.
func (p *Func) Begin(c *Call) *Call {
	if p.fn.reg.Hooks() != nil {
		return newCall(p.fn)
	}
	c.begin(p.fn)
	return c
}

// Enter fires the entry probe p; nil if this site is not on. c is Begin's Call, or nil
// for one from NewCall's pool. n (a constant) of v0..v3 are the function's integer
// parameters, passed for tracers alone: sdtctl seal's USDT note names where they are
// at the site (the fire call's arguments), so that bpftrace reads them as arg0...
func (p *Func) Enter(c *Call, n uint8, v0, v1, v2, v3 int64) *Call {
	return p.fire(c, atEntry|n<<atArgs, v0, v1, v2, v3)
}

// Return fires the return probe p; nil if this site is not on or the call began while
// it was off. latency is the call's Elapsed, computed before the site's check so that
// the USDT note can name where it is (bpftrace's arg0).
func (p *Func) Return(c *Call, latency int64) *Call {
	return p.fire(c, atReturn, latency, 0, 0, 0)
}

// A fire's at is its boundary, and for an entry the number of integer parameters it
// passes in v0.. shifted by atArgs: sdtctl seal reads it, a constant at every fire call.
const (
	atEntry = iota + 1
	atReturn

	atArgs  = 2
	atWhich = 1<<atArgs - 1
)

// Elapsed is the time since the call began, in nanoseconds, when the return fire
// carries it to someone (Begin read the clock); 0 otherwise, without reading the clock.
func (c *Call) Elapsed() int64 {
	if !c.timed {
		return 0
	}
	return rt.Nanotime() - c.start
}

// fire is the out-of-line half of every fbt site. v0..v3 are the USDT note's arguments
// (Enter, Return), in registers at the call: a return's v0 is its latency.
//
//go:noinline
func (p *Func) fire(c *Call, at uint8, v0, v1, v2, v3 int64) *Call {
	ret := rt.CallerPC()
	s, ok := p.h.AdmitUnpinned(ret) // hooks and the consumers run later, in Entered and Returned
	if !ok {
		return nil
	}
	switch at & atWhich {
	case atEntry:
		if c == nil {
			c = newCall(p.fn)
		}
		c.entered = true
		c.entry, c.entrySite, c.entryCons = ret, s, p.h.Consumers()
		if hs := p.fn.reg.Hooks(); hs != nil && c.pooled {
			// A call in the traced copy's frame began with no hook: hooks attached
			// since see the calls that begin after them.
			c.hooks = *hs
		}
	case atReturn:
		if c == nil || !c.begun {
			return nil
		}
		c.ret, c.retSite, c.retCons = ret, s, p.h.Consumers()
		if c.hooks == nil && c.pooled {
			if hs := p.fn.reg.Hooks(); hs != nil {
				c.hooks = *hs
				c.ran = len(c.hooks)
			}
		}
		if c.retCons == nil && len(c.hooks) == 0 || !c.timed {
			// Nothing sees the fire but its hit count (counted): no clock, no results.
			// Or a consumer or hook came after the call began, when nothing wanted its
			// start time: as for a call in flight when the probe is switched on, it is
			// not given a bogus latency.
			return nil
		}
		c.panicking = !c.done
		var panicking uint64
		if c.panicking {
			panicking = 1
		}
		c.res.N = 2
		c.res.Kinds[0], c.res.Slots[0] = registry.Int, uint64(v0)
		c.res.Kinds[1], c.res.Slots[1] = registry.Bool, panicking // a bool, as its type says: every fire of the probe the same kind
		c.resVals, c.resSet = c.resVals[:0], c.resSet[:0]
	}
	return c
}

// Call is one call of an instrumented function: its state, in the traced copy's frame
// or recycled; hooks see it through an *sdt.Call (view, made by sdt: View).
type Call struct {
	fn          *funcDesc
	view        any             // what hooks see: made once for a recycled Call
	start       int64           // when timed
	entry, ret  uintptr         // the return addresses of the entry and return fires
	entrySite   *registry.Point // their sites; nil when not attributed
	retSite     *registry.Point
	entryCons   *registry.Consumers // their consumers; nil: none
	retCons     *registry.Consumers
	args, res   registry.Args
	vals        []any // arguments, when hooks are attached
	resVals     []any // results, when hooks are attached
	resSet      []bool
	hooks       []*registry.Hook
	ran         int // entry hooks that ran: their exit hooks run, innermost first
	skipped     bool
	entered     bool // the entry probe fired
	done        bool // the call reached a return statement
	panicking   bool
	hooksWanted bool
	begun       bool // Begin or NewCall started it
	timed       bool // start was read: the return probe had a consumer or hooks
	pooled      bool // from calls: Release recycles it
}

// calls recycles Calls: a traced call releases its Call when it leaves (Release), so
// an enabled probe costs no allocation per call.
var calls = sync.Pool{New: func() any { return new(Call) }}

func newCall(d *funcDesc) *Call {
	c := calls.Get().(*Call)
	c.begin(d)
	c.pooled = true
	return c
}

// begin starts c, a zero Call, for d. The clock is read only when the return fire
// will carry its latency to someone: a consumer of the return probe or a hook (a
// return probe fired into its hit count alone reads no clock at all).
func (c *Call) begin(d *funcDesc) {
	c.fn, c.begun = d, true
	c.hooksWanted = d.reg.Hooks() != nil
	// A tracer attached to the return probe's USDT note reads the latency from the
	// note's argument: it is one more reader of the clock.
	if c.hooksWanted || d.reg.RetConsumed() || d.usdt > 0 && sealfmt.Semaphore(d.usdt) != 0 {
		c.start, c.timed = rt.Nanotime(), true
	}
}

// Release recycles the Call of a call that has left (the traced copy's deferred
// check calls it last).
func (c *Call) Release() {
	if c == nil || !c.pooled {
		return
	}
	// Reset what the next call reads, and drop the references this one held (the
	// argument slots' strings, the values hooks saw): not the whole struct.
	clear(c.args.Strs[:c.args.N])
	clear(c.res.Strs[:c.res.N])
	clear(c.vals)
	clear(c.resVals)
	c.args.N, c.res.N = 0, 0
	c.vals, c.resVals, c.resSet = c.vals[:0], c.resVals[:0], c.resSet[:0]
	c.entryCons, c.retCons, c.entrySite, c.retSite, c.hooks, c.fn = nil, nil, nil, nil, nil, nil
	c.ran, c.skipped, c.entered, c.done, c.panicking = 0, false, false, false, false
	c.begun, c.timed, c.start = false, false, 0
	// Only a pooled Call, on the heap, gets here: a Begin Call in a traced copy's frame
	// must not be made to escape by this path, which it never takes.
	calls.Put((*Call)(rt.Noescape(unsafe.Pointer(c))))
}

// EntryFired reports whether the entry probe fired for the call: then its arguments
// are recorded and its hooks run.
func (c *Call) EntryFired() bool { return c != nil && c.entered }

// Done marks the call as returning normally, at each of its return statements.
func (c *Call) Done() {
	if c != nil {
		c.done = true
	}
}

// Unwinding reports, from the traced copy's deferred check, whether the call is
// leaving without reaching a return statement: by panic (or runtime.Goexit).
func (c *Call) Unwinding() bool { return c != nil && !c.done }

// In records the next argument (the receiver first) of an entered call.
func In[T any](c *Call, x T) {
	if c.entryCons == nil && !c.hooksWanted {
		return // the fire is counted and nothing reads its arguments
	}
	if c.args.N < MaxArgs {
		if !setFast(&c.args, c.args.N, x) {
			setSlow(&c.args, c.args.N, x)
		}
		c.args.N++
	}
	if c.hooksWanted {
		c.vals = append(c.vals, x)
	}
}

// Out records the next result of a returning call.
func Out[T any](c *Call, x T) {
	if c.res.N < MaxArgs {
		if !setFast(&c.res, c.res.N, x) {
			setSlow(&c.res, c.res.N, x)
		}
		c.res.N++
	}
	if len(c.hooks) > 0 {
		c.resVals = append(c.resVals, x)
	}
}

// Result is result i of the call, v unless a hook set it (SkipCall, SetResult).
func Result[T any](c *Call, i int, v T) T {
	if i < len(c.resSet) && c.resSet[i] {
		if x, ok := c.resVals[i].(T); ok {
			return x
		} else if c.resVals[i] == nil {
			var zero T
			return zero
		}
		registry.Warnf("fbt hook on %s set result %d to a %T, not a %s: ignored", c.Func(), i, c.resVals[i], reflect.TypeFor[T]())
	}
	return v
}

// setSlow is setAny for x. Out of In and Out, so that only a value of another type
// than setFast's is moved to the heap for its address (setAny keeps it, as an
// interface's text may).
//
//go:noinline
func setSlow[T any](v *registry.Args, i int, x T) {
	setAny(v, i, reflect.TypeFor[T](), unsafe.Pointer(&x))
}

// setAny stores an fbt argument: Arg kinds by value, pointer-like kinds by address,
// an error by its text, anything else by its type's name (values.go).
func setAny(v *registry.Args, i int, t reflect.Type, p unsafe.Pointer) {
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan, reflect.Func:
		v.Kinds[i], v.Slots[i] = registry.Uint, uint64(*(*uintptr)(p))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Bool, reflect.Float32, reflect.Float64, reflect.String:
		setSlot(v, i, t, p)
	default:
		s, ok := interfaceText(t, p)
		if !ok {
			s = t.String()
		}
		v.Kinds[i], v.Strs[i] = registry.String, s
	}
}

// Entered delivers the entry fire and runs the entry hooks, outermost first. It
// reports whether a hook skipped the call (SkipCall): then the results are its.
func (c *Call) Entered() (skip bool) {
	if c.entryCons != nil {
		c.entryCons.EmitPin(c.entrySite, c.entry, noescapeArgs(&c.args))
	}
	for _, h := range c.hooks { // only a recycled Call has hooks: it is on the heap
		c.ran++
		if h.Enter != nil {
			h.Enter(recycled(c))
		}
		if c.skipped {
			return true
		}
	}
	return false
}

// Returned delivers the return fire, after running the exit hooks of the entry hooks
// that ran, innermost first (they may change the results).
func (c *Call) Returned() {
	for i := min(c.ran, len(c.hooks)) - 1; i >= 0; i-- {
		if h := c.hooks[i]; h.Exit != nil {
			h.Exit(recycled(c))
		}
	}
	if c.retCons != nil {
		c.retCons.EmitPin(c.retSite, c.ret, noescapeArgs(&c.res))
	}
}

// noescapeArgs hides a Call's arguments from escape analysis, which cannot see
// through the sinks EmitPin calls (interfaces) that they do not keep them (the
// registry copies them into the fire it delivers): otherwise every Call, in the traced copy's frame, would be
// moved to the heap, an allocation per call.
func noescapeArgs(a *registry.Args) *registry.Args {
	return (*registry.Args)(rt.Noescape(unsafe.Pointer(a)))
}

// recycled is c, a recycled Call (the only kind hooks see: newCall's, from the pool,
// on the heap already), hidden from escape analysis: given to a hook as an interface,
// it would otherwise move every Call in a traced copy's frame to the heap.
func recycled(c *Call) *Call {
	return (*Call)(rt.Noescape(unsafe.Pointer(c)))
}

// Func is the instrumented function's full name, pkg/path.(*T).M.
func (c *Call) Func() string {
	return c.fn.module + "." + c.fn.function[strings.IndexByte(c.fn.function, '.')+1:]
}

// Recv is the receiver of a method; nil for a function.
func (c *Call) Recv() any {
	if c.fn.recv && len(c.vals) > 0 {
		return c.vals[0]
	}
	return nil
}

// Args are the parameters (not the receiver).
func (c *Call) Args() []any {
	if c.fn.recv && len(c.vals) > 0 {
		return c.vals[1:]
	}
	return c.vals
}

// SkipCall makes the call return at once, with results (their number and types must
// be the function's; missing ones are zero). Inner hooks do not run.
func (c *Call) SkipCall(results ...any) {
	c.skipped = true
	c.resVals = append(c.resVals[:0], results...)
	c.resSet = make([]bool, len(results))
	for i := range c.resSet {
		c.resSet[i] = true
	}
}

// Results are the results the call returns (at exit).
func (c *Call) Results() []any { return c.resVals }

// SetResult changes result i of the call (at exit).
func (c *Call) SetResult(i int, v any) {
	for len(c.resSet) <= i {
		c.resSet = append(c.resSet, false)
	}
	for len(c.resVals) <= i {
		c.resVals = append(c.resVals, nil)
	}
	c.resVals[i], c.resSet[i] = v, true
}

// Latency is the time since the call began (at exit: its duration).
func (c *Call) Latency() time.Duration { return time.Duration(rt.Nanotime() - c.start) }

// Panicking reports whether the call is leaving by panic (or runtime.Goexit): it
// reached none of its return statements. The panic value is not recovered.
func (c *Call) Panicking() bool { return c.panicking }

// Skipped reports whether an entry hook skipped the call.
func (c *Call) Skipped() bool { return c.skipped }

// View is where package sdt keeps the *sdt.Call through which hooks see c.
func (c *Call) View() *any { return &c.view }

// setFast stores argument i of the common types without reflect (In and Out run at
// every enabled fire); false for any other type, which setAny stores.
func setFast[T any](v *registry.Args, i int, x T) bool {
	var zero T
	if any(zero) == nil {
		return false // an interface type: stored by its name, not by its dynamic value
	}
	switch y := any(x).(type) {
	case int:
		v.Kinds[i], v.Slots[i] = registry.Int, uint64(y)
	case int64:
		v.Kinds[i], v.Slots[i] = registry.Int, uint64(y)
	case int32:
		v.Kinds[i], v.Slots[i] = registry.Int, uint64(y)
	case uint:
		v.Kinds[i], v.Slots[i] = registry.Uint, uint64(y)
	case uint64:
		v.Kinds[i], v.Slots[i] = registry.Uint, y
	case uint32:
		v.Kinds[i], v.Slots[i] = registry.Uint, uint64(y)
	case bool:
		var s uint64
		if y {
			s = 1
		}
		v.Kinds[i], v.Slots[i] = registry.Bool, s
	case string:
		v.Kinds[i], v.Slots[i], v.Strs[i] = registry.String, 0, y
	default:
		return false
	}
	return true
}
