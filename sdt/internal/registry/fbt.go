package registry

import (
	"sort"
	"sync/atomic"
	"time"

	"github.com/gosdt/gosdt/internal/tracedcopy"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Function-boundary probes (fbt): `sdtctl toolexec -rules FILE` gives each function a
// rule matches an entry and a return probe, whose generated code calls the runtime
// in sdt/internal/fbtrt, which calls this side: their definitions (DefineFunc), their
// names (nameSites), and the hooks attached to their functions (HookFuncs).

// FbtFunc is the function an fbt probe is a boundary of, as sites name it, and the
// hooks attached to it: its entry and return probes share one.
type FbtFunc struct {
	module, function string // "example.com/app/store", "store.(*DB).Query"
	hooks            atomic.Pointer[[]*Hook]
	ret              *probe // its return probe, once defined
}

// RetConsumed reports whether f's return probe feeds a consumer now: then a call
// reads the clock for its latency.
func (f *FbtFunc) RetConsumed() bool { return f.ret != nil && f.ret.cons.Load() != nil }

// Hooks is what is attached to f now, lowest order first; nil when nothing is.
func (f *FbtFunc) Hooks() *[]*Hook { return f.hooks.Load() }

// FuncNamed is the record of the instrumented function module.function, made on
// first use: its entry and return probes share it (DefineFunc).
func FuncNamed(module, function string) *FbtFunc {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.fbtFuncs == nil {
		reg.fbtFuncs = map[string]*FbtFunc{}
	}
	fn := reg.fbtFuncs[module+"."+function]
	if fn == nil {
		fn = &FbtFunc{module: module, function: function}
		reg.fbtFuncs[module+"."+function] = fn
	}
	return fn
}

// DefineFunc registers one function-boundary probe (which is "entry" or "return") of
// fn, also under its USDT name, and returns its definition's head (its flag byte's
// first value, and its descriptor).
func DefineFunc(provider, usdt, which string, fn *FbtFunc, args, types []string, kinds []Kind) Head {
	targs := make([]ArgT, len(types))
	for i, t := range types {
		targs[i] = ArgT{Name: t, Kind: kinds[i]}
	}
	return DefineIn(provider, which, args, targs, fn.module, fn, provider+":"+usdt)
}

// AdmitUnpinned is Admit for an fbt fire, whose hooks run between admitting it and
// delivering it (EmitPin): s is its site (nil when not attributed), and the caller is
// left unpinned.
func (h *Head) AdmitUnpinned(ret uintptr) (s *Point, ok bool) {
	_, s, _, ok = h.Admit(ret)
	if !ok {
		return nil, false
	}
	rt.ProcUnpin()
	return s, true
}

// Point is a site as the registry tracks it, which fbt's runtime holds between a
// fire's admission and its delivery.
type Point = site

// Warnf says something to the program's operator on stderr.
func Warnf(format string, args ...any) { warnf(format, args...) }

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

// Hook is a pair of in-process hooks on instrumented functions: sdt.FuncHook, which
// sdt wraps so that fbt's runtime gives them each call as it keeps it.
type Hook struct {
	Enter, Exit func(CallState)
	order       int
	seq         uint64
}

// CallState is a call of an instrumented function as fbt's runtime keeps it, what
// sdt.Call shows a hook. View is where sdt keeps what it shows hooks of the call,
// made once for a call that is recycled.
type CallState interface {
	Func() string
	Recv() any
	Args() []any
	SkipCall(results ...any)
	Results() []any
	SetResult(i int, v any)
	Latency() time.Duration
	Panicking() bool
	Skipped() bool
	View() *any
}

var hookSeq atomic.Uint64

// HookFuncs attaches enter and exit at order to the instrumented functions spec
// matches (provider fbt; the name field is ignored: hooks see both boundaries), and
// returns how many it matched; sdt.HookFuncs says the rest.
func HookFuncs(specText string, order int, enter, exit func(CallState)) (detach func(), n int, err error) {
	sp, err := parseListSpec(specText)
	if err != nil {
		return nil, 0, err
	}
	e := &Hook{Enter: enter, Exit: exit, order: order, seq: hookSeq.Add(1)}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var fs []*FbtFunc
	for _, f := range reg.fbtFuncs {
		if sp.Match("fbt", f.module, f.function, "") || sp.Match("fbt", f.module, f.function, "entry") ||
			sp.Match("fbt", f.module, f.function, "return") {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return func() {}, 0, ErrNoMatch // none, or no function of this program is instrumented
	}
	for _, f := range fs {
		var next []*Hook
		if old := f.hooks.Load(); old != nil {
			next = append(next, *old...)
		}
		next = append(next, e)
		sort.SliceStable(next, func(i, j int) bool { return next[i].order < next[j].order })
		f.hooks.Store(&next)
	}
	return func() {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		for _, f := range fs {
			old := f.hooks.Load()
			if old == nil {
				continue
			}
			var next []*Hook
			for _, x := range *old {
				if x != e {
					next = append(next, x)
				}
			}
			if len(next) == 0 {
				f.hooks.Store(nil)
			} else {
				f.hooks.Store(&next)
			}
		}
	}, len(fs), nil
}
