// Package fprobe places probes on the entry and the returns of any function of the
// running program at run time, by writing a call to an assembly stub over its code.
package fprobe

import (
	"errors"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/patch"
)

const floatReg = arch.FloatReg

// maxSpills is the most register arguments a function has: 9 integer, 15 float.
const maxSpills = 24

// config is what a stub reads of one patched site (stub_amd64.s has the offsets). It is
// immutable once the site is in the table, and never freed.
type config struct {
	morestack uintptr // entry: the function's morestack block
	check     int64   // entry: the stack check's displacement from the entry SP
	resume    uintptr // entry: where the stub returns to
	ctxt      uintptr // entry: 1 when the closure context register is live
	frame     int64   // return: the frame the epilogue pops
	ret       uintptr // return: the function's RET
	nspill    uintptr
	spills    [maxSpills]uint64 // offset (int32) | size<<32 | save slot<<40
	fn        *Func
}

// Func is one function that can take probes, as Lookup found it.
type Func struct {
	Name  string
	Entry uintptr

	entry    *config   // the entry site
	rets     []*config // the return sites
	retSites []arch.FuncReturn
	orig     []byte // the entry's bytes
	spills   []arch.Spill
	retErr   error // why the returns take no probe; nil when they do

	// Under mu.
	entryOn, retOn bool
	patched        bool // the entry's call is written
	retPatched     bool

	onEntry atomic.Pointer[EntryHook]
	wantRet atomic.Bool
	ring    ring
	stats   Stats
}

// EntryHook is called at each entry of a function whose entry probe is on, on the
// calling goroutine, before the function's first instruction after its stack check.
// It must not call a function that has a probe (its own would recurse).
type EntryHook func(f *Func, a *Args)

// Args is the arguments of one call, valid only during the hook.
type Args struct {
	f    *Func
	argp unsafe.Pointer
}

// Words returns how many argument words the function takes in registers.
func (a *Args) Words() int { return len(a.f.spills) }

// Word returns argument word i (in the order of the ABI's register assignment: a
// string is two words, its pointer and its length), zero-extended from its width.
// Floating-point words are their IEEE bits.
func (a *Args) Word(i int) uint64 {
	if i < 0 || i >= len(a.f.spills) {
		return 0
	}
	s := a.f.spills[i]
	p := unsafe.Add(a.argp, s.Off)
	switch s.Size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// IsFloat reports whether word i was passed in a floating-point register.
func (a *Args) IsFloat(i int) bool {
	return i >= 0 && i < len(a.f.spills) && a.f.spills[i].Reg >= floatReg
}

// Stats are a function's counts since Lookup, exact: every hit of a probe that is on
// is counted.
type Stats struct {
	Entries atomic.Int64 // entry events delivered to the hook
	Returns atomic.Int64 // return events (a call that panics has none)
	NoEntry atomic.Int64 // returns whose entry time was not known: no latency
	Dropped atomic.Int64 // return events the ring had no room for (counted in Returns)
}

// Stats returns the function's counters.
func (f *Func) Stats() *Stats { return &f.stats }

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

// Lookup finds the function named name (as the runtime names it:
// "example.com/app/store.(*DB).Get") and reads its code: whether its entry and its
// returns take a probe, and if not, why.
func Lookup(name string) (*Func, error) {
	if host == nil || !patch.Supported() {
		return nil, errors.New("fprobe: function probes are not supported on this platform")
	}
	if why := Refused(name); why != "" {
		return nil, errors.New("fprobe: " + name + ": " + why)
	}
	m := module()
	t := m.Table
	if t == nil {
		return nil, errors.New("fprobe: the program's function table cannot be read")
	}
	for i := 0; i < t.Len(); i++ {
		if string(t.Name(i)) == name {
			return at(t, m, i)
		}
	}
	return nil, errors.New("fprobe: no function " + name + " in the program's text: it does not exist or was inlined into every caller (a rules-built fbt probe sees inlined calls)")
}

// at reads function i of the table.
func at(t *functab.Table, m *functab.Module, i int) (*Func, error) {
	entry := uintptr(t.Entry(i))
	mu.Lock()
	f := funcs[entry]
	mu.Unlock()
	if f != nil {
		return f, nil
	}
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
		return nil, errors.New("fprobe: " + name + ": entry: " + err.Error())
	}
	f = &Func{Name: name, Entry: entry, orig: append([]byte(nil), e.Orig...)}
	c := &config{morestack: uintptr(e.Morestack), check: e.Check, resume: uintptr(e.Resume), fn: f}
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
	}
	f.spills, f.entry = spills, c
	rets, err := host.FuncReturns(mem, w)
	if err != nil {
		f.retErr = errors.New("fprobe: " + name + ": return: " + err.Error())
	} else {
		f.retSites = rets
		for i, r := range rets {
			rets[i].Orig = append([]byte(nil), r.Orig...) // Read aliases the live text
			f.rets = append(f.rets, &config{frame: r.Frame, ret: uintptr(r.Ret), fn: f})
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if g := funcs[entry]; g != nil {
		return g, nil
	}
	funcs[entry] = f
	return f, nil
}

// ReturnErr says why the function's returns take no probe; nil when they do.
func (f *Func) ReturnErr() error { return f.retErr }

// SetEntry switches the entry probe on with hook h, or off (h nil).
func (f *Func) SetEntry(h EntryHook) error {
	mu.Lock()
	defer mu.Unlock()
	if h != nil {
		f.onEntry.Store(&h)
	}
	err := f.apply(h != nil, f.retOn)
	if h == nil && err == nil {
		f.onEntry.Store(nil)
	}
	return err
}

// SetReturn switches the return probes on or off.
func (f *Func) SetReturn(on bool) error {
	mu.Lock()
	defer mu.Unlock()
	if on && f.retErr != nil {
		return f.retErr
	}
	return f.apply(f.entryOn, on)
}

// apply patches the function's sites for the given state, all or nothing; mu held.
func (f *Func) apply(entryOn, retOn bool) error {
	needEntry := entryOn || retOn // the return's latency needs the entry's time
	var ws []patch.Write
	var add, del []uintptr
	var addc []*config
	estub, rstub := stubAddrs()
	if needEntry != f.patched {
		if os.Getenv("SDT_PATCH") == "off" {
			return ErrOff
		}
		call := host.CallTo(uint64(f.Entry), uint64(estub), len(f.orig))
		if call == nil {
			return errors.New("fprobe: " + f.Name + ": the entry stub is out of a call's reach")
		}
		k := f.Entry + 5
		if needEntry {
			ws = append(ws, patch.Write{Addr: f.Entry, Old: f.orig, New: call})
			add, addc = append(add, k), append(addc, f.entry)
		} else {
			ws = append(ws, patch.Write{Addr: f.Entry, Old: call, New: f.orig})
			del = append(del, k)
		}
	}
	if retOn != f.retPatched {
		if os.Getenv("SDT_PATCH") == "off" {
			return ErrOff
		}
		for i, r := range f.retSites {
			call, err := returnCall(r, rstub)
			if err != nil {
				return errors.New("fprobe: " + f.Name + ": return at " + hex(r.Addr) + ": " + err.Error())
			}
			k := uintptr(r.Addr) + 5
			if retOn {
				ws = append(ws, patch.Write{Addr: uintptr(r.Addr), Old: r.Orig, New: call})
				add, addc = append(add, k), append(addc, f.rets[i])
			} else {
				ws = append(ws, patch.Write{Addr: uintptr(r.Addr), Old: call, New: r.Orig})
				del = append(del, k)
			}
		}
	}
	if len(ws) == 0 {
		f.entryOn = entryOn
		return nil
	}
	if len(add) > 0 && !f.patched && !f.retPatched && countOn() >= MaxFuncs {
		return errors.New("fprobe: already " + itoa(MaxFuncs) + " functions with probes on, the most there may be")
	}
	if sites+len(add) > MaxSites {
		return errors.New("fprobe: more than " + itoa(MaxSites) + " patched sites")
	}
	for i, k := range add {
		insert(k, addc[i])
	}
	f.wantRet.Store(retOn)
	if _, err := patch.Apply(ws, patch.Options{Protocol: patch.Rendezvous}); err != nil {
		for _, k := range add {
			remove(k)
		}
		f.wantRet.Store(f.retOn)
		return errors.New("fprobe: " + f.Name + ": " + err.Error())
	}
	for _, k := range del {
		remove(k)
	}
	sites += len(add) - len(del)
	f.patched, f.retPatched = needEntry, retOn
	f.entryOn, f.retOn = entryOn, retOn
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
