package registry

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/internal/tracedcopy"
	"github.com/gosdt/gosdt/sdt/internal/fprobe"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Run-time function probes: fbt:<package>:<function>:entry|return on a function that
// no rule instrumented, placed by package fprobe (a call written over its code) when
// a spec names the function. Each such function gets two definitions, made when a
// spec first matches it: entry and return. They have no site and no variable: they
// are held on as a whole, their state fprobe's record of the function (wholeOn), and
// switchLocked writes it, and the text, through fprobe.Set in the same batch as the
// sites. Return events wait in the function's
// ring (its return stub may not call Go code) until a goroutine of ours drains them
// into the consumers.

// maxRuntimeFuncs is how many functions a spec may match for run-time probes.
const maxRuntimeFuncs = fprobe.MaxFuncs

// runtimeFunc is a function with run-time probes.
type runtimeFunc struct {
	f                *fprobe.Func
	module, function string // as sites name functions: "example.com/app/store", "store.(*DB).Get"
	entry, ret       *probe
	args             atomic.Pointer[argLayout] // replaced whole (a signature came), read by the hook and the drain
	dropsSaid        int64                     // return events dropped that a warning has said (drain's)
	dropsAt          int64                     // rt.Nanotime of that warning (time.Now would link time's zones)
	// what drain delivers the return events to: the return probe's consumers but
	// those the return path writes (setDirect); nil: none
	drainCons atomic.Pointer[Consumers]

	// held while return events are between the ring and the consumers: a flush
	// that takes it has every event read before it delivered (flushReturns)
	delivering sync.Mutex
}

// argLayout is how a run-time function's probes read their arguments: the entry's from
// a call's words, the return's from a return event's.
type argLayout struct{ params, results []wordArg }

// wordArg is one argument of a run-time probe, read from the register words of a call
// (entry) or of a return: its first word's index and how it is shown.
type wordArg struct {
	name  string // from the signature; "" for a word (arg0...)
	typ   string
	word  int
	kind  Kind
	size  uint8 // bytes of an integer or float word: 4 is a float32
	str   bool  // a string: words word (pointer) and word+1 (length)
	iface bool  // an interface: not nil when word (its type word) is not 0
}

// onlyStars reports whether s is empty or all '*': a module field that names no module.
func onlyStars(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '*' {
			return false
		}
	}
	return true
}

// isRuntimeSpec reports whether sp may name run-time function probes: provider fbt,
// name entry or return, and a package given, or a function with its package
// (store.(*DB).Get). fbt:::entry, and a bare name (fbt::Put:entry), name only what
// rules instrumented: every function of a program, or every Put of it and of the
// standard library, is not a request.
func isRuntimeSpec(sp spec.Spec) bool {
	if sp.Provider != "fbt" || (!spec.Match(sp.Name, "entry") && !spec.Match(sp.Name, "return")) {
		return false
	}
	fn := sp.Function
	return !onlyStars(sp.Module) || (strings.Contains(fn, ".") && !strings.HasPrefix(fn, "(") && !strings.HasPrefix(fn, "*("))
}

// runtimeCandidates is the functions of the text that sp names, but for those rules
// instrumented (their fbt probes are the build's) and gosdt's traced copies.
// Call with r.mu held, after resolve.
func (r *registry) runtimeCandidates(sp spec.Spec) ([]fprobe.Candidate, error) {
	built := map[string]bool{}
	for _, p := range r.probes {
		if p.fn != nil {
			built[spec.JoinFunc(p.fn.module, p.fn.function)] = true
		}
	}
	return fprobe.Find(func(name string) bool {
		module, fn := spec.SplitFunc(name)
		if !spec.Match(sp.Module, module) || !spec.MatchFunc(sp.Function, fn) || built[name] {
			return false
		}
		_, _, copied := tracedcopy.Split(fn)
		return !copied
	})
}

// matchRuntime makes the run-time probes of the functions sp names (the registry's
// match then finds them). A function that may not take a probe is skipped; refused
// says why, for when nothing else matches. err is a spec that names too many.
// Call with r.mu held, after resolve.
func (r *registry) matchRuntime(sp spec.Spec, text string) (refused, err error) {
	if !isRuntimeSpec(sp) {
		return nil, nil
	}
	cands, err := r.runtimeCandidates(sp)
	if err != nil {
		return fmt.Errorf("%q: %w", text, err), nil
	}
	if len(cands) == 0 {
		return inlinedOnly(sp, text), nil
	}
	var refusals []string
	placeable := cands[:0]
	for _, c := range cands {
		if why := fprobe.Refused(c.Name); why != "" {
			refusals = append(refusals, c.Name+": "+why)
		} else {
			placeable = append(placeable, c)
		}
	}
	if len(placeable) > maxRuntimeFuncs {
		return nil, fmt.Errorf("%q: matches %d functions for run-time probes, at most %d may have them at once: name fewer", text, len(placeable), maxRuntimeFuncs)
	}
	for _, c := range placeable {
		rf, err := r.runtimeFunc(c)
		if err != nil {
			refusals = append(refusals, strings.TrimPrefix(err.Error(), "fprobe: "))
			continue
		}
		if err := rf.f.ReturnErr(); err != nil && spec.Match(sp.Name, "return") {
			refusals = append(refusals, strings.TrimPrefix(err.Error(), "fprobe: "))
		}
	}
	if len(refusals) == 0 {
		return nil, nil
	}
	more := ""
	if len(refusals) > 3 {
		more = fmt.Sprintf(" (and %d more)", len(refusals)-3)
		refusals = refusals[:3]
	}
	return fmt.Errorf("%q: %w: of the functions it names, none may take a run-time probe: %s%s", text, ErrNoMatch, strings.Join(refusals, "; "), more), nil
}

// placeable reports whether p, a definition sp matched, may be switched by it: a
// run-time probe only by a spec that names run-time probes (fbt:::entry names what
// rules instrumented, whatever run-time probes were placed before), and a return
// probe only where the function's returns take one.
func (p *probe) placeable(sp spec.Spec) bool {
	if p.dyn == nil {
		return true
	}
	return isRuntimeSpec(sp) && (p != p.dyn.ret || p.dyn.f.ReturnErr() == nil)
}

// runtimeFunc returns c's run-time probes, making them the first time. Call with
// r.mu held.
func (r *registry) runtimeFunc(c fprobe.Candidate) (*runtimeFunc, error) {
	if rf := r.runtime[c.Name]; rf != nil {
		return rf, nil
	}
	f, err := fprobe.LookupCandidate(c)
	if err != nil {
		return nil, err
	}
	module, function := spec.SplitFunc(c.Name)
	rf := &runtimeFunc{f: f, module: module, function: function}
	params, results := wordsOf(f)
	l := &argLayout{params, results}
	if sig := r.sigs[c.Name]; sig != nil {
		if l, err = typeFrom(f, sig); err != nil {
			return nil, err // a signature that is not of this code: refused, not guessed
		}
	}
	rf.args.Store(l)
	f.SetQuiet(true) // nobody consumes its events yet (rebuild says when one does)
	f.SetReturnQuiet(true)
	rf.entry = r.runtimeProbe(rf, "entry", l.params)
	rf.ret = r.runtimeProbe(rf, "return", l.results)
	if r.runtime == nil {
		r.runtime = map[string]*runtimeFunc{}
	}
	r.runtime[c.Name] = rf
	return rf, nil
}

// wordsOf is the arguments of a function whose types nothing told: its register
// words, each an argument of its own, as many as a probe carries.
func wordsOf(f *fprobe.Func) (params, results []wordArg) {
	for i, s := range f.Words() {
		if i == MaxArgs {
			break
		}
		k := Uint
		if s.Float {
			k = Float
		}
		params = append(params, wordArg{word: i, kind: k, size: s.Size})
	}
	for i := 0; i < min(fprobe.ReturnWords, MaxArgs-1); i++ {
		results = append(results, wordArg{word: i, kind: Uint, size: 8})
	}
	return params, results
}

// runtimeProbe makes the definition of rf's boundary name (entry or return) and
// registers it. Call with r.mu held.
func (r *registry) runtimeProbe(rf *runtimeFunc, name string, args []wordArg) *probe {
	p := &probe{provider: "fbt", name: name, module: rf.module, dyn: rf}
	p.setArgs(name, args)
	if r.byName == nil { // a program with no definition of its own
		r.byName, r.defined, r.copies = map[string][]*probe{}, map[*probe]bool{}, map[string]*FbtFunc{}
	}
	r.probes = append(r.probes, p)
	r.defined[p] = true
	r.byName["fbt:"+name] = append(r.byName["fbt:"+name], p)
	return p
}

// argInfos names the arguments of a run-time probe: an entry's words arg0..., a
// return's latency_ns and result words r0....
func argInfos(name string, args []wordArg) []ArgInfo {
	var out []ArgInfo
	prefix := "arg"
	if name == "return" {
		out = append(out, ArgInfo{"latency_ns", "int64"})
		prefix = "r"
	}
	for i, a := range args {
		if a.name != "" {
			out = append(out, ArgInfo{a.name, a.typ})
			continue
		}
		t := "uint64"
		if a.kind == Float {
			t = "float64"
		}
		out = append(out, ArgInfo{fmt.Sprintf("%s%d", prefix, i), t})
	}
	return out
}

// wholeOn reports whether p is on as a whole (enabled wide). A run-time function
// probe's is package fprobe's record of its function, the one there is (invariant.go):
// the registry keeps no copy, and reads it under fprobe's lock. Not for fires: they
// read p.wide, which only a probe with no run-time function has.
func (p *probe) wholeOn() bool {
	rf := p.dyn
	if rf == nil {
		return p.wide.Load()
	}
	entry, ret := rf.f.On()
	if p == rf.ret {
		return ret
	}
	return entry
}

// wideFunc is the function field a definition held on as a whole matches with: its
// function for a run-time probe, else none.
func (p *probe) wideFunc() string {
	if p.dyn != nil {
		return p.dyn.function
	}
	return ""
}

// runtimeChanges is what fprobe must write for the definitions in wides to be
// switched to on, the rest keeping their state. Call with r.mu held.
func runtimeChanges(wides []*probe, on bool) (to, back []fprobe.Change) {
	seen := map[*runtimeFunc]bool{}
	for _, p := range wides {
		rf := p.dyn
		if rf == nil || seen[rf] {
			continue
		}
		seen[rf] = true
		entry, ret := rf.f.On()
		back = append(back, rf.change(entry, ret))
		for _, q := range wides {
			if q == rf.entry {
				entry = on
			} else if q == rf.ret {
				ret = on
			}
		}
		to = append(to, rf.change(entry, ret))
	}
	return to, back
}

func (rf *runtimeFunc) change(entry, ret bool) fprobe.Change {
	// onEntry delivers to consumers that run pinned and never block.
	c := fprobe.Change{Func: rf.f, Return: ret, Pinned: true}
	if ret {
		c.Drain = rf.drainNow
	}
	if entry {
		c.Entry = rf.onEntry
	}
	return c
}

// onEntry delivers an entry event (fprobe.EntryHook), on the calling goroutine, pinned
// to its P (fprobe.Change.Pinned), which fprobe counted (hitsNow). A call nobody
// consumes does not come here (fprobe.Func.SetQuiet).
func (rf *runtimeFunc) onEntry(_ *fprobe.Func, a *fprobe.Args) {
	// fprobe calls it only while the entry probe is on (its hook is set).
	c := rf.entry.cons.Load()
	if c == nil {
		return
	}
	pid := rt.ProcPin()
	v := PFiring(pid)
	if v == nil {
		v = new(firing)
	}
	l := rf.args.Load()
	v.N, v.Goid, v.Ticks = len(l.params), 0, 0
	for i, x := range l.params {
		v.Kinds[i] = x.kind
		setWord(&v.Args, i, x, a.Word(x.word), a.Word(x.word+1), true)
	}
	// The function's entry names it: the probe has no site of its own.
	c.emitAt(pid, nil, rf.f.Entry, rf.f.EntryRet(), v)
	for i := range l.params {
		v.Strs[i] = "" // a P's firing keeps no string alive
	}
	rt.ProcUnpin()
}

// hitsNow is p's fires: a run-time entry probe's are counted by fprobe, per P, the
// calls that nobody consumes included; a return probe's are those delivered and
// those fprobe folded (nobody consumed them: fprobe.Func.SetReturnQuiet).
func (p *probe) hitsNow() uint64 {
	n := p.hits.Load()
	if p.dyn != nil && p == p.dyn.entry {
		n += uint64(p.dyn.f.Stats().Entries)
	}
	if p.dyn != nil && p == p.dyn.ret {
		n += uint64(p.dyn.f.Folded().Returns) + uint64(p.dyn.f.Stats().Direct)
	}
	return n
}

// consumed tells fprobe whether anybody consumes p's events (c, its new consumers,
// not nil): a run-time probe's calls nobody consumes only count them, and their
// returns are folded on their P, with their latency, not put into a ring for drain.
// Call with reg.mu held (rebuild).
func (p *probe) consumed(c *Consumers) {
	switch {
	case p.dyn == nil:
	case p == p.dyn.entry:
		p.dyn.f.SetQuiet(c == nil)
	case p == p.dyn.ret:
		p.dyn.setDirect(c)
		p.dyn.f.SetReturnQuiet(c == nil)
	}
}

// wideAddr is the site address p's unattributed fires are told to come from: a
// run-time function probe's, its function's entry (as onEntry and emitReturns say).
func (p *probe) wideAddr() uintptr {
	if p.dyn != nil {
		return p.dyn.f.Entry
	}
	return 0
}

// setWord stores argument i of a run-time probe from its words w (and w2, a string's
// length). live says the words are a call's arguments still held by the call: only
// then is a string's text read.
func setWord(v *Args, i int, x wordArg, w, w2 uint64, live bool) {
	switch {
	case x.str:
		if live && w != 0 && w2 <= math.MaxInt32 {
			// The caller passed this string and the call is running: its bytes are
			// the caller's (rodata, heap it references, or its stack), valid until
			// the hook returns; the sink copies what it keeps.
			v.Strs[i] = unsafe.String((*byte)(rawptr.At(uintptr(w))), int(w2))
		}
	case x.iface:
		v.Strs[i] = nilError
		if w != 0 {
			v.Strs[i] = "non-nil"
		}
	case x.kind == Float && x.size == 4:
		v.Slots[i] = math.Float64bits(float64(math.Float32frombits(uint32(w))))
	case x.kind == Int && x.size < 8:
		sh := 64 - 8*uint(x.size)
		v.Slots[i] = uint64(int64(w<<sh) >> sh)
	default:
		v.Slots[i] = w
	}
}

// nilError is how an fbt probe carries a nil error (as sdt/internal/fbtrt does).
const nilError = "<nil>"

// drainEvery is how long return events may wait in their rings.
const drainEvery = time.Millisecond

// startDrain starts the goroutine that delivers return events, if it is not running.
// Call with r.mu held.
func (r *registry) startDrain() {
	if !r.draining {
		r.draining = true
		go r.drain()
	}
}

// drain delivers the return events of every run-time function until none has its
// return probe on and their rings are empty.
func (r *registry) drain() {
	buf := make([]fprobe.Return, 256)
	for {
		r.mu.Lock()
		var fs []*runtimeFunc
		anyOn := false
		for _, rf := range r.runtime {
			fs = append(fs, rf)
			_, ret := rf.f.On()
			anyOn = anyOn || ret
		}
		r.mu.Unlock()
		n, busiest := 0, 0
		fprobe.ReadRate() // for the latencies the return path writes itself
		for _, rf := range fs {
			m := rf.deliverReturns(buf, math.MaxInt)
			rf.sayDrops()
			n, busiest = n+m, max(busiest, m)
		}
		if !anyOn && n == 0 {
			r.mu.Lock()
			stop := true
			for _, rf := range r.runtime {
				_, ret := rf.f.On()
				stop = stop && !ret
			}
			if stop {
				r.draining = false
			}
			r.mu.Unlock()
			if stop {
				return
			}
		}
		if busiest >= fprobe.RingSize/4 {
			// A ring filled by a quarter in one period: calls come faster than a
			// period's sleep lets through. Drain again at once, yielding the P.
			runtime.Gosched()
			continue
		}
		time.Sleep(drainEvery)
	}
}

// drainNow delivers rf's waiting return events on the calling goroutine: a call
// that found them half a ring deep (fprobe.Change.Drain), which would otherwise wait
// for drain, a goroutine the machine may not be running.
func (rf *runtimeFunc) drainNow() {
	var buf [64]fprobe.Return
	rf.deliverReturns(buf[:], fprobe.RingSize)
}

// deliverReturns moves rf's return events to the consumers, until none waits or
// after at least most, and returns how many. Each batch is read and delivered under
// rf.delivering, so that a flush (which takes it) finds every batch read before it
// delivered; a reader waits for another at most one batch.
func (rf *runtimeFunc) deliverReturns(buf []fprobe.Return, most int) int {
	total := 0
	for {
		rf.delivering.Lock()
		n := rf.deliverBatch(buf)
		rf.delivering.Unlock()
		total += n
		if n < len(buf) || total >= most {
			return total
		}
	}
}

// deliverBatch reads up to len(buf) of rf's return events and delivers them.
// rf.delivering held.
func (rf *runtimeFunc) deliverBatch(buf []fprobe.Return) int {
	p := rf.ret
	n := rf.f.ReadReturns(buf)
	p.hits.Add(uint64(n))
	if c := rf.drainCons.Load(); c != nil && n > 0 {
		rf.emitReturns(c, buf[:n])
	}
	return n
}

// emitReturns delivers return events to c, pinned to one P (sinks run pinned and
// never block), in that P's firing.
func (rf *runtimeFunc) emitReturns(c *Consumers, evs []fprobe.Return) {
	l := rf.args.Load()
	pid := rt.ProcPin()
	v := PFiring(pid)
	if v == nil {
		v = new(firing)
	}
	for i := range evs {
		e := &evs[i]
		returnArgs(&v.Args, l.results, e.Latency, &e.Results)
		// The goroutine that returned, and when: the return path read both.
		v.Goid, v.Ticks = e.Goid, e.Ticks
		c.emitAt(pid, nil, rf.f.Entry, NoStack, v)
	}
	for i := range l.results {
		v.Strs[1+i] = "" // a P's firing keeps no string alive
	}
	v.Goid, v.Ticks = 0, 0
	rt.ProcUnpin()
}

// returnArgs stores the arguments of a return whose latency is lat and result
// words w into v: the latency, then each of results. fprobe's return path reads
// the same values for a trace's predicate (argsOf).
func returnArgs(v *Args, results []wordArg, lat int64, w *[fprobe.ReturnWords]uint64) {
	v.N = 1 + len(results)
	v.Kinds[0] = Int
	v.Slots[0] = uint64(lat)
	for i, x := range results {
		v.Kinds[1+i] = x.kind
		var w2 uint64
		if x.word+1 < len(w) {
			w2 = w[x.word+1]
		}
		setWord(v, 1+i, x, w[x.word], w2, false)
	}
}

// flushReturns delivers every return event of run-time functions made before it was
// called: what waits in their rings, and what another reader (drain, a call that
// found its ring crowded) has read and not yet delivered. A consumer calls it before
// it reports (a snapshot, a trace's end, a close), so that what it says counts every
// return that happened before: the drain goroutine runs only now and then.
func (r *registry) flushReturns() {
	r.mu.Lock()
	fs := make([]*runtimeFunc, 0, len(r.runtime))
	for _, rf := range r.runtime {
		fs = append(fs, rf)
	}
	r.mu.Unlock()
	var buf [64]fprobe.Return
	for _, rf := range fs {
		rf.deliverReturns(buf[:], math.MaxInt)
		// A return handler that took its slot before this call and was descheduled
		// before writing it holds back the events after it: wait for it, briefly
		// (it runs without a safe point, so only its thread's scheduling delays it).
		for start := rt.Nanotime(); rf.f.Unwritten() && rt.Nanotime()-start < int64(flushWait); {
			runtime.Gosched()
			rf.deliverReturns(buf[:], math.MaxInt)
		}
	}
}

// flushWait bounds a flush's wait for a return event being written.
const flushWait = 10 * time.Millisecond

// sayDrops warns, at most once a second, of return events the function's ring had no
// room for (List counts them too): the drain fell behind its calls. Drain's
// goroutine only: it owns dropsSaid and dropsAt.
func (rf *runtimeFunc) sayDrops() {
	d := rf.f.Stats().Dropped
	now := rt.Nanotime()
	if d == rf.dropsSaid || now-rf.dropsAt < int64(time.Second) {
		return
	}
	rf.dropsSaid, rf.dropsAt = d, now
	warnf("fbt:%s:%s:return: %d return events dropped so far: its ring (%d events) was full before they were delivered", rf.module, rf.function, d, fprobe.RingSize)
}

// points describes where p, one of rf's probes, is placed: the entry, or each return;
// refused (err not nil) says why it may take none.
func (rf *runtimeFunc) points(p *probe, refused error) []SiteInfo {
	state := Unpatched
	if p.wholeOn() {
		state = Patched
	}
	addrs := []uintptr{rf.f.Entry}
	if p == rf.ret {
		if err := rf.f.ReturnErr(); err != nil && refused == nil {
			refused = err
		}
		addrs = rf.f.Returns()
	}
	pts := pointsAt(rf.f.Entry, p.name, addrs, state, refused)
	for i := range pts {
		pts[i].HeldBy = holderNames(holdKey{p: p})
	}
	if st := rf.f.Stats(); p == rf.ret && len(pts) > 0 {
		var why []string
		if st.Dropped > 0 {
			why = append(why, fmt.Sprintf("%d return events dropped: the ring was full before they were delivered", st.Dropped))
		}
		if st.Waited > 0 {
			why = append(why, fmt.Sprintf("%d calls waited at their entry for return events to be delivered", st.Waited))
		}
		if len(why) > 0 {
			pts[0].Reason = strings.Join(why, "; ")
		}
	}
	return pts
}

// pointsAt is the SiteInfo of a run-time probe's points: at addrs, or, refused, one at
// the function's entry saying why.
func pointsAt(entry uintptr, kind string, addrs []uintptr, state SiteState, refused error) []SiteInfo {
	var file string
	var line int
	if f := runtime.FuncForPC(entry); f != nil {
		file, line = f.FileLine(entry)
	}
	if refused != nil {
		return []SiteInfo{{Addr: entry, File: file, Line: line, Kind: kind, State: Refused,
			Reason: strings.TrimPrefix(refused.Error(), "fprobe: ")}}
	}
	out := make([]SiteInfo, len(addrs))
	for i, a := range addrs {
		out[i] = SiteInfo{Addr: a, File: file, Line: line, Kind: kind, State: state, Enabled: state == Patched}
	}
	return out
}

// runtimeToList is the functions sp names for run-time probes that have none made yet
// (those made are the registry's definitions), and the signatures sdtctl sent: what
// describeRuntime describes without the registry's lock. Call with r.mu held.
func (r *registry) runtimeToList(sp spec.Spec) ([]fprobe.Candidate, map[string]*FuncSig) {
	if !isRuntimeSpec(sp) {
		return nil, nil
	}
	cands, err := r.runtimeCandidates(sp)
	if err != nil {
		return nil, nil
	}
	out := cands[:0]
	sigs := map[string]*FuncSig{}
	for _, c := range cands {
		if r.runtime[c.Name] == nil {
			out = append(out, c)
			if s := r.sigs[c.Name]; s != nil {
				sigs[c.Name] = s
			}
		}
	}
	return out, sigs
}

// describeRuntime describes the run-time probes of cands that sp names: what each
// would carry, or why it may take none. Nothing is kept of them.
func describeRuntime(sp spec.Spec, cands []fprobe.Candidate, sigs map[string]*FuncSig) []ProbeInfo {
	var out []ProbeInfo
	for _, c := range cands {
		module, function := spec.SplitFunc(c.Name)
		f, err := fprobe.Inspect(c)
		var params, results []wordArg
		if err == nil {
			params, results = wordsOf(f)
			if sig := sigs[c.Name]; sig != nil {
				var l *argLayout
				if l, err = typeFrom(f, sig); err == nil {
					params, results = l.params, l.results
				}
			}
		}
		for _, b := range []struct {
			name string
			args []wordArg
		}{{"entry", params}, {"return", results}} {
			if !spec.Match(sp.Name, b.name) {
				continue
			}
			pi := ProbeInfo{Provider: "fbt", Module: module, Function: function, Name: b.name, Kind: "runtime"}
			pi.Args = argInfos(b.name, b.args)
			switch {
			case err != nil:
				pi.Sites = pointsAt(c.Entry, b.name, nil, Refused, err)
			case b.name == "entry":
				pi.Sites = pointsAt(c.Entry, b.name, []uintptr{c.Entry}, Unpatched, nil)
			default:
				pi.Sites = pointsAt(c.Entry, b.name, f.Returns(), Unpatched, f.ReturnErr())
			}
			out = append(out, pi)
		}
	}
	return out
}

// inlinedOnly says where the one function sp names was inlined, when it has no code of
// its own: a run-time probe cannot see it, a rules-built one can. nil when sp names no
// such function (or not one function).
func inlinedOnly(sp spec.Spec, text string) error {
	if !isLiteral(sp.Module) || !isLiteral(sp.Function) || !strings.Contains(sp.Function, ".") {
		return nil
	}
	into := fprobe.InlinedInto(spec.JoinFunc(sp.Module, sp.Function))
	if len(into) == 0 {
		return nil
	}
	more := ""
	if len(into) > 5 {
		more = fmt.Sprintf(" and %d more", len(into)-5)
		into = into[:5]
	}
	return fmt.Errorf("%q: %w: %s was inlined into every caller (%s%s) and has no code of its own to probe at run time; a build with rules (sdtctl toolexec -rules) gives it fbt probes that see its inlined calls",
		text, ErrNoMatch, spec.JoinFunc(sp.Module, sp.Function), strings.Join(into, ", "), more)
}

// signatures keeps what sdtctl read of functions' signatures for their run-time probes: the probes made from then on carry named, typed arguments, and
// those made before without one take it while nobody holds or consumes them.
func (r *registry) signatures(sigs []FuncSig) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sigs == nil {
		r.sigs = map[string]*FuncSig{}
	}
	for i := range sigs {
		s := &sigs[i]
		if len(r.sigs) >= maxKeptSigs && r.sigs[s.Func] == nil {
			clear(r.sigs) // they are read again for each request: keeping them is a cache
		}
		r.sigs[s.Func] = s
		if rf := r.runtime[s.Func]; rf != nil && rf.idle() {
			if l, err := typeFrom(rf.f, s); err == nil {
				rf.args.Store(l)
				rf.entry.setArgs("entry", l.params)
				rf.ret.setArgs("return", l.results)
			}
		}
	}
}

// maxKeptSigs bounds the signatures kept.
const maxKeptSigs = 4096

// idle reports whether nobody holds or consumes rf's probes. Call with reg.mu held.
func (rf *runtimeFunc) idle() bool {
	for _, p := range []*probe{rf.entry, rf.ret} {
		if len(p.wideOwners) > 0 || p.cons.Load() != nil {
			return false
		}
	}
	return true
}

// setArgs gives p, one of a run-time function's probes, the arguments args.
func (p *probe) setArgs(name string, args []wordArg) {
	p.args, p.types, p.kinds = nil, nil, nil
	if name == "return" {
		p.kinds = append(p.kinds, Int)
	}
	for _, a := range argInfos(name, args) {
		p.args = append(p.args, a.Name)
		p.types = append(p.types, a.Type)
	}
	for _, a := range args {
		p.kinds = append(p.kinds, a.kind)
	}
}

// typeFrom is how f's probes read the arguments sig names, after holding sig's spill
// block against the code's: a signature of another build is refused.
func typeFrom(f *fprobe.Func, sig *FuncSig) (*argLayout, error) {
	if err := f.CheckLayout(sig.Spills); err != nil && !errors.Is(err, fprobe.ErrNoSpills) {
		return nil, err
	}
	var params, results []wordArg
	for _, v := range sig.Params {
		if a, ok := paramArg(f, v); ok && len(params) < MaxArgs {
			params = append(params, a)
		}
	}
	for _, v := range sig.Results {
		if a, ok := resultArg(v); ok && len(results) < MaxArgs-1 {
			results = append(results, a)
		}
	}
	return &argLayout{params, results}, nil
}

// paramArg is how an entry probe carries parameter v: from the register words the
// code spills (a parameter the function never uses is not spilled: it is left out).
func paramArg(f *fprobe.Func, v SigValue) (wordArg, bool) {
	if len(v.Words) == 0 {
		return wordArg{}, false // on the stack, or of no size
	}
	idx := make([]int, len(v.Words))
	for i, w := range v.Words {
		if idx[i] = f.WordOf(w.Float, w.Reg); idx[i] < 0 {
			return wordArg{}, false
		}
	}
	a, ok := valueArg(v, idx)
	if ok && a.str && !f.LivePointer(a.word) {
		// Its bytes are not kept alive by the call (the function does not use the
		// string): its length only.
		a = wordArg{name: "len(" + v.Name + ")", typ: "int", word: idx[1], kind: Int, size: 8}
	}
	return a, ok
}

// resultArg is how a return probe carries result v: from the integer result registers
// a return event holds; a string by its length (its bytes may be gone when the event
// is read), an error or interface as nil or not.
func resultArg(v SigValue) (wordArg, bool) {
	idx := make([]int, len(v.Words))
	for i, w := range v.Words {
		if w.Float || int(w.Reg) >= fprobe.ReturnWords {
			return wordArg{}, false
		}
		idx[i] = int(w.Reg)
	}
	if len(idx) == 0 {
		return wordArg{}, false
	}
	if v.Kind == "string" && len(idx) == 2 {
		return wordArg{name: "len(" + v.Name + ")", typ: "int", word: idx[1], kind: Int, size: 8}, true
	}
	return valueArg(v, idx)
}

// valueArg is value v, whose words are Args's (or a return's) words idx.
func valueArg(v SigValue, idx []int) (wordArg, bool) {
	a := wordArg{name: v.Name, typ: v.Type, word: idx[0], size: v.Words[0].Size}
	switch v.Kind {
	case "int":
		a.kind = Int
	case "uint", "pointer":
		a.kind = Uint
	case "bool":
		a.kind = Bool
	case "float":
		a.kind = Float
	case "string":
		if len(idx) != 2 || idx[1] != idx[0]+1 {
			return wordArg{}, false
		}
		a.kind, a.str = String, true
	case "error", "interface":
		a.kind, a.iface = String, true
	case "slice":
		if len(idx) != 3 {
			return wordArg{}, false
		}
		a = wordArg{name: "len(" + v.Name + ")", typ: "int", word: idx[1], kind: Int, size: 8}
	default:
		return wordArg{}, false // a struct, an array, a complex number: not carried
	}
	if len(idx) > 1 && !a.str && v.Kind != "slice" && !a.iface {
		return wordArg{}, false
	}
	return a, true
}
