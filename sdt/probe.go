package sdt

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sdt/internal/bridge"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Arg is what a probe argument can be: integers, bools, floats and strings.
type Arg interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 |
		~uint32 | ~uint64 | ~uintptr | ~bool | ~float32 | ~float64 | ~string
}

// noCopy makes go vet's copylocks check reject copies of a probe definition: a copy
// would have a flag byte of its own that no Enable ever sets.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// head starts every probe type. Sites compare on, at offset 0 of a package-level
// variable, so the check is one instruction on a static address.
type head struct {
	on   uint8 // read by sites; written only by setFlag, under the registry lock
	_    noCopy
	core *probe // the definition's descriptor
}

// probe is the descriptor of one definition: what Define was told, where the
// definition lives, and its sites. Fields below mu are guarded by the registry lock.
type probe struct {
	provider, name string
	args, types    []string
	kinds          []bridge.Kind
	sizes          []uint8      // of each argument's Go type (fbt: 0, as fires tell)
	module         string       // package that called Define
	fn             *fbtFunc     // an fbt probe's function; nil for any other
	dyn            *runtimeFunc // a run-time function probe's function; nil for any other

	hits atomic.Uint64             // fires not attributed to a site (through non-inlined code)
	wide atomic.Bool               // enabled as a whole: unattributed fires are delivered
	cons atomic.Pointer[consumers] // ring and aggregations fed by its fires; nil: none

	heads    []*head // where the definition lives, once resolved
	searched bool    // data and bss were searched for it
	sites    []*site
	// wideOwners hold the definition on as a whole (guarded by the registry lock).
	wideOwners []*owner
}

// define creates the descriptor behind a probe definition; Define0..Define6 call it.
// The definition belongs to the package that called Define.
func define(provider, name string, args []string, types []argT) head {
	var module string
	if pc, _, _, ok := runtime.Caller(2); ok {
		if f := runtime.FuncForPC(pc); f != nil {
			module, _ = spec.SplitFunc(f.Name())
		}
	}
	return defineIn(provider, name, args, types, module, nil, "")
}

// defineIn creates and registers the descriptor of a definition of module; fn names
// the function of an fbt probe (nil for any other), alias a second provider:name it is
// found by (an fbt probe's USDT name).
func defineIn(provider, name string, args []string, types []argT, module string, fn *fbtFunc, alias string) head {
	p := &probe{provider: provider, name: name, args: args, module: module, fn: fn}
	for _, t := range types {
		p.types = append(p.types, t.name)
		p.kinds = append(p.kinds, t.kind)
		p.sizes = append(p.sizes, t.size)
	}
	var on uint8
	if o := startOwner(); o != nil {
		on = 1
		p.wide.Store(true)
		p.wideOwners = []*owner{o}
	}
	reg.add(p, alias)
	followDefined(p)
	return head{on: on, core: p}
}

// admit decides whether a fire is delivered, and counts it. ret is the return address
// of the fire call, which names the site (s); a fire from code that was not inlined
// (or a site that could not be verified) is not attributed (s is nil) and counts on
// the definition. When it admits, the goroutine is left pinned to its P, pid, for the
// consumers (package control's buffers are per P): the caller must procUnpin.
func (h *head) admit(ret uintptr) (pid int, s *site, ok bool) {
	if s = reg.byReturn.lookup(ret); s != nil {
		if !s.on.Load() {
			return 0, nil, false
		}
		pid = rt.ProcPin()
		s.hit(pid)
		return pid, s, true
	}
	p := h.core
	if p == nil || !p.wide.Load() {
		return 0, nil, false
	}
	p.hits.Add(1)
	return rt.ProcPin(), nil, true
}

// consumers returns what the ring and aggregations want of this definition's fires;
// nil when nothing is attached (and before the definition is initialised).
func (h *head) consumers() *consumers {
	if p := h.core; p != nil {
		return p.cons.Load()
	}
	return nil
}

// setFlag writes a definition's flag byte. Sites read it with a plain load (that is
// the point), so the write is hidden from the race detector, which would otherwise
// report every Enable as a race with every site.
//
//go:norace
func setFlag(h *head, on bool) {
	var v uint8
	if on {
		v = 1
	}
	h.on = v
}

// handlers is a copy-on-write list of typed handlers: fire reads it without a lock.
type handlers[F any] struct {
	mu   sync.Mutex
	list atomicList[F]
}

type atomicList[F any] struct{ p atomic.Pointer[[]*F] }

func (h *handlers[F]) add(f F) (detach func()) {
	e := &f
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.list.load()
	next := append(append(make([]*F, 0, len(old)+1), old...), e)
	h.list.p.Store(&next)
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		old := h.list.load()
		next := make([]*F, 0, len(old))
		for _, x := range old {
			if x != e {
				next = append(next, x)
			}
		}
		h.list.p.Store(&next)
	}
}

func (l *atomicList[F]) load() []*F {
	if p := l.p.Load(); p != nil {
		return *p
	}
	return nil
}

// argT is a probe argument's Go type, as List names it, and its slot kind.
type argT struct {
	name string
	kind bridge.Kind
	size uint8
}

func argType[T any]() argT {
	t := reflect.TypeFor[T]()
	return argT{name: t.String(), kind: bridge.KindOf(t), size: uint8(t.Size())}
}
