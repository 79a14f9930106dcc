// Package fprobe places probes on the entry and the returns of any function of the
// running program at run time, by writing a call to an assembly stub over its code.
package fprobe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/goversion"
	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt/internal/goid"
)

const floatReg = arch.FloatReg

// config is what a stub reads of one patched site (stub_$GOARCH.s has the offsets). It is
// immutable once the site is in the table, and never freed.
type config struct {
	morestack uintptr // entry: the function's morestack block
	check     int64   // entry: the stack check's displacement from the entry SP
	resume    uintptr // entry: where the stub returns to
	ctxt      uintptr // entry: 1 when the closure context register is live
	frame     int64   // the frame the epilogue pops; arm64's entry: the frame the prologue made
	ret       uintptr // return: the function's RET
	nspill    uintptr
	spills    [maxSpills]uint64 // offset (int32) | size<<32 | save slot<<40
	fn        *Func
	// The argument registers the stubs keep: the first nint integer and nflt
	// floating-point ones of the ABI's order, which cover every register spilled.
	nint, nflt uintptr
	// live (entry, small frame): 1 while the call is written. The stub then returns
	// to the call's own return address, inside the replaced JLS (an unsafe point: no
	// goroutine is ever stopped there), where the CPU predicts it returns. Set after
	// the call is written and cleared before it is taken away, in Set; a patch needs
	// every P stopped, which a goroutine in the stub, assembly, never is.
	live uint64
}

// Func is one function that can take probes, as Lookup found it.
type Func struct {
	Name  string
	Entry uintptr

	site     uintptr   // where the entry's call is written: the entry (amd64), the prologue's end (arm64)
	entry    *config   // the entry site
	rets     []*config // the return sites
	retSites []arch.FuncReturn
	orig     []byte // the entry's bytes
	spills   []arch.Spill
	ptrs     uint32 // bit i: spill i holds a pointer the GC keeps alive at entry (args stack map 0)
	retErr   error  // why the returns take no probe; nil when they do

	// Under mu. entryOn and retOn are the one record of whether f's probes are on
	// (the registry reads them through On and keeps no copy); Set alone writes them,
	// and State holds the rest of f's state against them.
	entryOn, retOn bool
	patched        bool // the entry's call is written
	retPatched     bool

	onEntry   atomic.Pointer[EntryHook]
	onCrowded atomic.Pointer[func()] // Change.Drain
	// Read by the stubs' handlers on every call (atomic.go), written by Set.
	wantRet uint64 // 1: return events wanted
	hookOn  uint64 // 1: the entry probe is on
	quiet   uint64 // 1: entry events are counted, not delivered (SetQuiet)
	pinned  uint64 // 1: the hook runs pinned to its P (Change.Pinned)
	// 1: returns are counted and their latencies folded per P, not put into a ring
	// (SetReturnQuiet)
	retQuiet uint64
	// *DirectSet: the traces the return path writes into (SetDirect); nil: none
	direct unsafe.Pointer
	// 1: the direct set is Ringless: an entry makes no ring and waits for none
	ringless uint64

	pp      []pstate // per P: counts, return ring; made by Set before any call is written
	over    counters // Ps beyond pp's, atomically
	shared  *ring    // the return ring of Ps beyond pp's
	reading sync.Mutex
	readers []*ring // ReadReturns's, under reading
	nread   uint64  // events read (ReadReturns, under reading)
	stuck   uint64  // nread+1 when a call stopped waiting for the reader (waitForRoom), 0 before

	leaf *leafInfo // a leaf, whose entry is a jump to a slot (leaf.go); nil otherwise
	jret *jretInfo // returns that are jumps to a return slot (jret.go); nil otherwise
}

// EntryHook is called at each entry of a function whose entry probe is on, on the
// calling goroutine, before the function's first instruction after its stack check.
// The probed calls it makes itself deliver no event (Stats.Nested counts them). a is
// valid until the hook returns: a hook that keeps the arguments copies *a.
type EntryHook func(f *Func, a *Args)

// Args is the register arguments of one call, copied as words.
// (The spill slots themselves lie in the goroutine's stack, which may move: no heap
// object may point there.)
type Args struct {
	n     int
	float uint32 // bit i: word i came in a floating-point register
	w     [maxSpills]uint64
}

// Words returns how many argument words the function takes in registers.
func (a *Args) Words() int { return a.n }

// Word returns argument word i (in the order of the ABI's register assignment: a
// string is two words, its pointer and its length), zero-extended from its width.
// Floating-point words are their IEEE bits.
func (a *Args) Word(i int) uint64 {
	if i < 0 || i >= a.n {
		return 0
	}
	return a.w[i]
}

// IsFloat reports whether word i was passed in a floating-point register.
func (a *Args) IsFloat(i int) bool { return i >= 0 && i < a.n && a.float&(1<<i) != 0 }

// readArgs copies the arguments from their spill slots at argp, in the calling
// goroutine's own stack. Hidden from the race detector: it cannot relate accesses to
// stack memory that the runtime hands from goroutine to goroutine (a stack freed by
// one, allocated by another) through pointers made by the stub, and reports them.
//
//go:norace
func (f *Func) readArgs(a *Args, argp unsafe.Pointer) {
	a.n = len(f.spills)
	for i, s := range f.spills {
		p := unsafe.Add(argp, s.Off)
		switch s.Size {
		case 1:
			a.w[i] = uint64(*(*uint8)(p))
		case 2:
			a.w[i] = uint64(*(*uint16)(p))
		case 4:
			a.w[i] = uint64(*(*uint32)(p))
		default:
			a.w[i] = *(*uint64)(p)
		}
		if s.Reg >= floatReg {
			a.float |= 1 << i
		}
	}
}

// Stats are a function's counts, exact: every hit of a probe that is on is counted.
type Stats struct {
	Entries int64 // entry events: calls that found the entry probe on (delivered to the hook, counted only, or Nested)
	Returns int64 // return events (a call that panics has none)
	NoEntry int64 // returns whose entry time was not known: no latency
	Dropped int64 // return events the ring had no room for (counted in Returns)
	Nested  int64 // of the entry events, those not delivered: their goroutine was running a hook already
	Waited  int64 // calls that waited at their entry for the return ring to be read
	Direct  int64 // return events written by the return path only (SetDirect, Ringless): into no ring
}

// Stats returns the function's counts since Lookup.
func (f *Func) Stats() Stats {
	c := f.sum()
	return Stats{int64(c.entries), int64(c.returns), int64(c.noEntry), int64(c.dropped), int64(c.nested), int64(c.waited), int64(c.direct)}
}

// SetQuiet says whether the entry hook is to be called (false, the default) or the
// entry events only counted (Stats.Entries): a hook whose events nobody consumes
// costs its calls nothing but the count. It takes effect at once, without a patch.
func (f *Func) SetQuiet(quiet bool) { store64(&f.quiet, b2u(quiet)) }

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// goidAt is the offset of the goroutine id in a g (package goid), found before the
// first return probe is placed; the return handler reads it without a lock.
var goidAt uintptr

var (
	mu    sync.Mutex // the table, every Func's state, patching
	funcs = map[uintptr]*Func{}
	// sites counts the patched sites, against MaxSites.
	sites int
)

// MaxFuncs is how many functions may have a probe on at once.
const MaxFuncs = 256

// ErrOff means SDT_PATCH=off: no text is written, so no function probe is placed.
var ErrOff = errors.New("fprobe: SDT_PATCH=off: function probes need text patching")

// refused lists the packages whose functions never take a probe: the Go runtime and
// whatever the probe's own path may execute (the stubs' handlers, the hooks of gosdt's
// consumers), where a probe would recurse or run where the runtime allows no call.
var refused = []string{
	"runtime.", "runtime/", "internal/", "reflect.", "sync.", "sync/", "unsafe.",
	"syscall.", "os/signal.", "time.", "math/bits.", "github.com/gosdt/gosdt/",
	"golang.org/x/sys/", "go:", "type:",
}

// allowed is a package prefix the tests let in.
var allowed string

// Refused reports why function name may not take a probe, "" if it may.
func Refused(name string) string {
	if allowed != "" && strings.HasPrefix(name, allowed) {
		return ""
	}
	for _, p := range refused {
		if strings.HasPrefix(name, p) {
			return "in " + strings.TrimSuffix(strings.TrimSuffix(p, "."), "/") + ", which a probe's own path may execute"
		}
	}
	return ""
}

var (
	selfOnce sync.Once
	self     functab.Module
)

func module() *functab.Module {
	selfOnce.Do(func() { self = functab.Self() })
	return &self
}

// liveText reads the program's text (arch.Memory).
type liveText struct{ lo, hi uintptr }

func (m liveText) Read(pc uint64, n int) []byte {
	if pc < uint64(m.lo) || pc >= uint64(m.hi) || n <= 0 {
		return nil
	}
	n = min(n, int(m.hi-uintptr(pc)))
	return unsafe.Slice((*byte)(rawptr.At(uintptr(pc))), n)
}

// Candidate is a function of the program's text, by name, as Find found it.
type Candidate struct {
	Name  string
	Entry uintptr
	index int
}

// Find returns the functions of the program's text whose names (as the runtime names
// them) match accepts, in the order of their addresses, and those Refused names too.
func Find(match func(name string) bool) ([]Candidate, error) {
	t, err := table()
	if err != nil {
		return nil, err
	}
	var out []Candidate
	for i := 0; i < t.Len(); i++ {
		if name := string(t.Name(i)); match(name) {
			out = append(out, Candidate{name, uintptr(t.Entry(i)), i})
		}
	}
	return out, nil
}

// Inspect reads c's code as Lookup does, but keeps nothing: a list of what can take
// a probe reads thousands of functions and places none.
func Inspect(c Candidate) (*Func, error) {
	if why := Refused(c.Name); why != "" {
		return nil, errors.New("fprobe: " + c.Name + ": " + why)
	}
	t, err := table()
	if err != nil {
		return nil, err
	}
	m := module()
	mu.Lock()
	f := funcs[uintptr(t.Entry(c.index))]
	mu.Unlock()
	if f != nil {
		return f, nil
	}
	return read(t, m, c.index)
}

// LookupCandidate is Lookup of a function Find found.
func LookupCandidate(c Candidate) (*Func, error) {
	if why := Refused(c.Name); why != "" {
		return nil, errors.New("fprobe: " + c.Name + ": " + why)
	}
	t, err := table()
	if err != nil {
		return nil, err
	}
	return at(t, module(), c.index)
}

// InlinedInto returns the functions of the text that inlined the function named name
// (as the runtime names it), in the order of their addresses: where a function with no
// code of its own runs.
func InlinedInto(name string) []string {
	t, err := table()
	if err != nil {
		return nil
	}
	ranges, err := t.Inliners([]byte(name), func(rest []byte) bool { return len(rest) == 0 })
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range ranges {
		for i := t.Find(t.Text + uint64(r[0])); i >= 0 && i < t.Len() && t.Entry(i) < t.Text+uint64(r[1]); i++ {
			out = append(out, string(t.Name(i)))
		}
	}
	return out
}

// table is the program's function table, where function probes are supported.
func table() (*functab.Table, error) {
	if host == nil || !patch.Supported() {
		return nil, errors.New("fprobe: function probes are not supported on this platform")
	}
	// The prologue and epilogue shapes it rewrites and the stack maps it reads are
	// those of the Go releases read; the function table is checked by functab.Self.
	for _, p := range []goversion.Part{goversion.Shapes, goversion.StackMaps, goversion.FuncTab} {
		if err := goversion.CheckRunning(p); err != nil {
			return nil, errors.New("fprobe: " + err.Error())
		}
	}
	t := module().Table
	if t == nil {
		return nil, errors.New("fprobe: the program's function table cannot be read")
	}
	return t, nil
}

// Lookup finds the function named name (as the runtime names it:
// "example.com/app/store.(*DB).Get") and reads its code: whether its entry and its
// returns take a probe, and if not, why.
func Lookup(name string) (*Func, error) {
	t, err := table()
	if err != nil {
		return nil, err
	}
	if why := Refused(name); why != "" {
		return nil, errors.New("fprobe: " + name + ": " + why)
	}
	for i := 0; i < t.Len(); i++ {
		if string(t.Name(i)) == name {
			return at(t, module(), i)
		}
	}
	return nil, errors.New("fprobe: no function " + name + " in the program's text: it does not exist or was inlined into every caller (a rules-built fbt probe sees inlined calls)")
}

// at reads function i of the table, once: a Func is kept for good.
func at(t *functab.Table, m *functab.Module, i int) (*Func, error) {
	entry := uintptr(t.Entry(i))
	mu.Lock()
	f := funcs[entry]
	mu.Unlock()
	if f != nil {
		return f, nil
	}
	f, err := read(t, m, i)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if g := funcs[entry]; g != nil {
		return g, nil
	}
	funcs[entry] = f
	return f, nil
}

// read reads function i of the table.
func read(t *functab.Table, m *functab.Module, i int) (*Func, error) {
	entry := uintptr(t.Entry(i))
	name := string(t.Name(i))
	mem := liveText{m.Text, m.Etext}
	w, err := host.Walk(mem, t.Entry(i), t.End(i))
	if err != nil {
		return nil, errors.New("fprobe: " + name + ": " + err.Error())
	}
	nameAt := func(pc uint64) string {
		if j := t.Find(pc); j >= 0 && t.Entry(j) == pc {
			return string(t.Name(j))
		}
		return ""
	}
	e, err := host.FuncEntry(mem, w, nameAt)
	if err != nil {
		lf, lerr := readLeaf(t, i, w, mem, m)
		if lerr == nil {
			return lf, nil
		}
		return nil, errors.New("fprobe: " + name + ": entry: " + err.Error() + "; as a leaf: " + lerr.Error())
	}
	f := &Func{Name: name, Entry: entry, site: uintptr(e.Addr), orig: append([]byte(nil), e.Orig...)}
	c := &config{morestack: uintptr(e.Morestack), check: e.Check, resume: uintptr(e.Resume), frame: e.Frame, fn: f}
	if e.Context {
		c.ctxt = 1
	}
	spills := append([]arch.Spill(nil), e.Spills...)
	sort.Slice(spills, func(a, b int) bool { return spills[a].Off < spills[b].Off })
	if len(spills) > maxSpills {
		return nil, errors.New("fprobe: " + name + ": more register arguments than the ABI has")
	}
	for _, s := range spills {
		slot, ok := saveSlot(s.Reg)
		if !ok || s.Off < 0 {
			return nil, errors.New("fprobe: " + name + ": a spill the stub cannot make")
		}
		c.spills[c.nspill] = uint64(uint32(s.Off)) | uint64(s.Size)<<32 | uint64(slot)<<40
		c.nspill++
		if s.Reg >= floatReg {
			c.nflt = max(c.nflt, uintptr(s.Reg-floatReg)+1)
		} else {
			c.nint = max(c.nint, uintptr(s.Reg)+1)
		}
	}
	f.spills, f.entry = spills, c
	f.ptrs = livePointers(t, i, spills)
	rets, err := host.FuncReturns(mem, w)
	for _, r := range rets {
		// Where the prologue's size is known (arm64), every epilogue must release the
		// same frame: the return stub pops it, and finds the arguments above it.
		if err == nil && e.Frame != 0 && r.Frame != e.Frame {
			err = errors.New("the epilogue at " + hex(r.Addr) + " releases " + itoa(int(r.Frame)) + " bytes, the prologue allocated " + itoa(int(e.Frame)))
		}
	}
	if err != nil {
		// Where no epilogue takes a call, the RET itself may take a jump: the frame is
		// gone there whatever the epilogue's shape.
		lo, hi := imageOf(m)
		if jr, puns, jerr := readJumpRets(t, i, w, mem, lo, hi); jerr == nil {
			f.setJumpRets(jr, puns)
		} else {
			f.retErr = errors.New("fprobe: " + name + ": return: " + err.Error() + "; by a jump: " + jerr.Error())
		}
	} else {
		f.retSites = rets
		for i, r := range rets {
			rets[i].Orig = append([]byte(nil), r.Orig...) // Read aliases the live text
			f.rets = append(f.rets, &config{frame: r.Frame, ret: uintptr(r.Ret), fn: f})
		}
	}
	return f, nil
}

// Word describes one register argument word of a function: its width in bytes, and
// whether it is passed in a floating-point register.
type Word struct {
	Size  uint8
	Float bool
}

// Words describes the register argument words of f, in the order Args holds them.
func (f *Func) Words() []Word {
	ws := make([]Word, len(f.spills))
	for i, s := range f.spills {
		ws[i] = Word{Size: uint8(s.Size), Float: s.Reg >= floatReg}
	}
	return ws
}

// Returns is the addresses of f's returns that take a probe (none when ReturnErr says
// why not).
func (f *Func) Returns() []uintptr {
	out := make([]uintptr, len(f.retSites))
	for i, r := range f.retSites {
		out[i] = uintptr(r.Addr)
	}
	return out
}

// WordOf returns the index among Args's words of the word passed in integer register
// reg (float: floating-point register reg), -1 if the function's code spills none.
func (f *Func) WordOf(float bool, reg uint8) int {
	if float {
		reg += floatReg
	}
	for i, s := range f.spills {
		if s.Reg == reg {
			return i
		}
	}
	return -1
}

// LivePointer reports whether Args's word i is a pointer the garbage collector keeps
// alive while the entry hook runs (the function's stack map at its entry says so):
// only then may a hook read what it points to.
func (f *Func) LivePointer(i int) bool { return i >= 0 && i < 32 && f.ptrs&(1<<i) != 0 }

// livePointers reads the arguments' stack map 0 of function i (FUNCDATA_ArgsPointerMaps,
// runtime.stackmap: n, nbit int32, then n bitmaps of nbit bits, a bit per word of the
// argument area) and says which spill slots it marks.
func livePointers(t *functab.Table, i int, spills []arch.Spill) uint32 {
	off, ok := t.FuncData(i, functab.FuncDataArgsPointerMaps)
	if !ok {
		return 0
	}
	g := t.Gofunc()[off:]
	if len(g) < 8 {
		return 0
	}
	n, nbit := int32(binary.LittleEndian.Uint32(g)), int32(binary.LittleEndian.Uint32(g[4:]))
	if n < 1 || nbit < 0 || int(8+(nbit+7)/8) > len(g) {
		return 0
	}
	bits := g[8 : 8+(nbit+7)/8]
	var m uint32
	for j, s := range spills {
		w := s.Off / 8
		if j < 32 && s.Size == 8 && s.Off%8 == 0 && w < nbit && bits[w/8]&(1<<(w%8)) != 0 {
			m |= 1 << j
		}
	}
	return m
}

// ReturnWords is how many result words a Return carries.
const ReturnWords = returnRegs

// EntryRet is the return address of the call written at f's entry: the pc of f's frame
// in a call stack taken by an entry hook.
func (f *Func) EntryRet() uintptr { return f.site + callLen }

// On reports which of f's probes are on: its entry (with a hook) and its returns, as
// Set last made them. It is the record of it there is: the registry keeps none.
func (f *Func) On() (entry, returns bool) {
	mu.Lock()
	defer mu.Unlock()
	return f.entryOn, f.retOn
}

// State is what f's probes are, entry (with a hook) and returns, as Set left them,
// and bad, the first part of f's state that disagrees with them ("" when none): the
// calls it has written, the flags the stubs read (a hook, the wish for return
// events), or the text (the entry's and each return's bytes: the call to a stub while
// it is to be, else the code's own). Checkers call it; fires never do.
func (f *Func) State() (entry, returns bool, bad string) {
	mu.Lock()
	defer mu.Unlock()
	entry, returns = f.entryOn, f.retOn
	switch {
	case f.patched != (entry || returns):
		return entry, returns, "the entry's call written or not"
	case f.retPatched != returns:
		return entry, returns, "the returns' calls written or not"
	case (load64(&f.hookOn) != 0) != entry || (f.onEntry.Load() != nil) != entry:
		return entry, returns, "the entry hook"
	case (load64(&f.wantRet) != 0) != returns:
		return entry, returns, "the wish for return events"
	}
	estub, rstub := stubAddrs()
	want := f.orig
	switch {
	case f.patched && isLeaf(f):
		if f.leaf.slot < 0 {
			return entry, returns, "the leaf's slot"
		}
		want = leafEntryText(f, leafSlotAddr(f.leaf.slot))
		if t := f.leaf.pun; t != 0 {
			if !trampHolds(t, leafSlotAddr(f.leaf.slot)) {
				return entry, returns, "the leaf's trampoline"
			}
		}
	case f.patched:
		want = host.CallTo(uint64(f.site), uint64(estub), len(f.orig))
	}
	if want == nil || !bytes.Equal(mem(f.site, len(want)), want) {
		return entry, returns, "the entry's text"
	}
	for k, r := range f.retSites {
		want := r.Orig
		switch {
		case f.retPatched && f.jret != nil:
			want = jretText(f, r)
			if t := f.jret.puns[k]; t != 0 && f.jret.slot >= 0 && !trampHolds(t, jretSlotAddr(f.jret.slot)) {
				return entry, returns, "a return's trampoline"
			}
		case f.retPatched:
			want, _ = returnCall(r, rstub)
		}
		if want == nil || !bytes.Equal(mem(uintptr(r.Addr), len(want)), want) {
			return entry, returns, "a return's text"
		}
	}
	return entry, returns, ""
}

// ReturnErr says why the function's returns take no probe; nil when they do.
func (f *Func) ReturnErr() error { return f.retErr }

// SetEntry switches the entry probe on with hook h, or off (h nil).
func (f *Func) SetEntry(h EntryHook) error {
	mu.Lock()
	ret := f.retOn
	mu.Unlock()
	return Set([]Change{{Func: f, Entry: h, Return: ret}})
}

// SetReturn switches the return probes on or off.
func (f *Func) SetReturn(on bool) error {
	var h EntryHook
	if p := f.onEntry.Load(); p != nil {
		h = *p
	}
	return Set([]Change{{Func: f, Entry: h, Return: on}})
}

// Change is the state one function's probes are to have.
type Change struct {
	Func   *Func
	Entry  EntryHook // the entry probe's hook; nil: off
	Return bool      // the return probes
	// Drain, with Return: reads the function's return events (ReadReturns) and
	// delivers them. A call that finds them waiting in numbers runs it before it
	// goes on, on its own goroutine; nil: such a call waits for their reader.
	Drain func()
	// Pinned: Entry runs pinned to the calling goroutine's P, so it may not block
	// (nor call anything that does); a probed call it makes is then told nested by
	// a flag of the P, with no table shared by the cores.
	Pinned bool
}

// Set gives every function of cs its state, all or nothing: one rewrite of the text
// inside one stop-the-world (package patch), after every site's bytes are compared.
func Set(cs []Change) error {
	mu.Lock()
	defer mu.Unlock()
	applied := false
	defer func() { leafFinish(applied) }()
	var ws []patch.Write
	var add, del []uintptr
	var addc []*config
	estub, rstub := stubAddrs()
	newFuncs := 0
	for _, c := range cs {
		f := c.Func
		if c.Return && f.retErr != nil {
			return f.retErr
		}
		needEntry := c.Entry != nil || c.Return // the return's latency needs the entry's time
		if (needEntry || c.Return) && !f.patched && !f.retPatched {
			newFuncs++
		}
		if isLeaf(f) && c.Entry != nil && !c.Pinned {
			// Here, not where the entry's jump is written: it may be in already, for
			// the return's time.
			return errors.New("fprobe: " + f.Name + ": a leaf's entry hook must run pinned (Change.Pinned): its arguments are in no stack map")
		}
		if needEntry != f.patched && isLeaf(f) {
			lw, err := leafWrites(f, needEntry)
			if err != nil {
				return err
			}
			ws = append(ws, lw...)
		} else if needEntry != f.patched {
			call := host.CallTo(uint64(f.site), uint64(estub), len(f.orig))
			if call == nil {
				return errors.New("fprobe: " + f.Name + ": the entry stub is out of a call's reach")
			}
			if needEntry {
				ws = append(ws, patch.Write{Addr: f.site, Old: f.orig, New: call})
				add, addc = append(add, f.site+callLen), append(addc, f.entry)
			} else {
				ws = append(ws, patch.Write{Addr: f.site, Old: call, New: f.orig})
				del = append(del, f.site+callLen)
			}
		}
		if c.Return != f.retPatched && f.jret != nil {
			jw, err := jretWrites(f, c.Return)
			if err != nil {
				return err
			}
			ws = append(ws, jw...)
		} else if c.Return != f.retPatched {
			for i, r := range f.retSites {
				call, err := returnCall(r, rstub)
				if err != nil {
					return errors.New("fprobe: " + f.Name + ": return at " + hex(r.Addr) + ": " + err.Error())
				}
				if c.Return {
					ws = append(ws, patch.Write{Addr: uintptr(r.Addr), Old: r.Orig, New: call})
					add, addc = append(add, uintptr(r.Addr)+callLen), append(addc, f.rets[i])
				} else {
					ws = append(ws, patch.Write{Addr: uintptr(r.Addr), Old: call, New: r.Orig})
					del = append(del, uintptr(r.Addr)+callLen)
				}
			}
		}
	}
	if len(ws) > 0 && os.Getenv("SDT_PATCH") == "off" {
		return ErrOff
	}
	if newFuncs > 0 && countOn()+newFuncs > MaxFuncs {
		return errors.New("fprobe: at most " + itoa(MaxFuncs) + " functions may have probes on at once")
	}
	if sites+len(add) > MaxSites {
		return errors.New("fprobe: at most " + itoa(MaxSites) + " sites may be patched at once")
	}
	// Hooks, rings and the wish for return events before the text: a stub that runs
	// once the call is written finds them.
	for _, c := range cs {
		f := c.Func
		if (c.Entry != nil || c.Return) && f.pp == nil {
			f.pp = make([]pstate, procs())
		}
		if c.Return && f.shared == nil {
			makeLat()
			startClock()
			f.shared = new(ring)
			goidAt = goid.Offset()
		}
		if c.Return && isLeaf(f) {
			// A leaf's entry handler is nosplit and pinned: it cannot make a ring
			// (entrySlow's), so every P has its own from the start.
			for pid := range f.pp {
				f.makeRing(pid)
			}
		}
		if c.Entry != nil {
			h := c.Entry
			c.Func.onEntry.Store(&h)
			store64(&f.pinned, b2u(c.Pinned))
			store64(&f.hookOn, 1)
		}
		if c.Return {
			c.Func.onCrowded.Store(nil)
			if c.Drain != nil {
				d := c.Drain
				c.Func.onCrowded.Store(&d)
			}
			store64(&c.Func.wantRet, 1)
		}
	}
	for i, k := range add {
		if !insert(k, addc[i]) {
			for _, k := range add[:i] {
				remove(k)
			}
			return errors.New("fprobe: the site table is full")
		}
	}
	var unlive []*config
	for _, c := range cs {
		if f := c.Func; f.patched && c.Entry == nil && !c.Return && load64(&f.entry.live) != 0 {
			store64(&f.entry.live, 0)
			unlive = append(unlive, f.entry)
		}
	}
	if len(ws) > 0 {
		if _, err := patch.Apply(ws, patch.Options{Protocol: patch.Rendezvous}); err != nil {
			for _, c := range unlive {
				store64(&c.live, 1) // nothing was written: the calls are still there
			}
			for _, k := range add {
				remove(k)
			}
			for _, c := range cs {
				store64(&c.Func.wantRet, b2u(c.Func.retOn))
				if !c.Func.entryOn {
					store64(&c.Func.hookOn, 0)
					c.Func.onEntry.Store(nil)
				}
			}
			return errors.New("fprobe: " + err.Error())
		}
	}
	applied = true
	for _, k := range del {
		remove(k)
	}
	sites += len(add) - len(del)
	for _, c := range cs {
		f := c.Func
		f.patched, f.retPatched = c.Entry != nil || c.Return, c.Return
		if f.patched && f.entry.check == 0 && len(f.orig) > callLen {
			store64(&f.entry.live, 1)
		}
		f.entryOn, f.retOn = c.Entry != nil, c.Return
		if c.Entry == nil {
			store64(&f.hookOn, 0)
			f.onEntry.Store(nil)
		}
		if !c.Return {
			f.onCrowded.Store(nil)
		}
		store64(&f.wantRet, b2u(c.Return))
	}
	return nil
}

// countOn is how many functions have a probe on; mu held.
func countOn() int {
	n := 0
	for _, f := range funcs {
		if f.patched || f.retPatched {
			n++
		}
	}
	return n
}

// returnCall is the call written at return r: to the stub, or through a pad where
// the call must keep POPQ BP's byte (pad_linux_amd64.go); mu held.
func returnCall(r arch.FuncReturn, stub uintptr) ([]byte, error) {
	target := uint64(stub)
	if r.Pad {
		p, err := padFor(uintptr(r.Addr), stub)
		if err != nil {
			return nil, err
		}
		target = uint64(p)
	}
	call := host.CallTo(r.Addr, target, len(r.Orig))
	if call == nil {
		return nil, errors.New("the stub is out of a call's reach")
	}
	if r.Pad && call[len(call)-1] != r.Orig[len(r.Orig)-1] {
		return nil, errors.New("the call does not keep POPQ BP's byte")
	}
	return call, nil
}

// mem is n bytes of the program's memory at addr: text, or a pad.
func mem(addr uintptr, n int) []byte { return unsafe.Slice((*byte)(rawptr.At(addr)), n) }

func hex(v uint64) string {
	const d = "0123456789abcdef"
	var b [18]byte
	i := len(b)
	for {
		i--
		b[i] = d[v&15]
		if v >>= 4; v == 0 {
			break
		}
	}
	i--
	b[i] = 'x'
	i--
	b[i] = '0'
	return string(b[i:])
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			return string(b[i:])
		}
	}
}
