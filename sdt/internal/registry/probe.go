package registry

import (
	"sync/atomic"

	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// noCopy makes go vet's copylocks check reject copies of a probe definition: a copy
// would have a flag byte of its own that no Enable ever sets.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Head starts every probe type (package sdt's and fbt's). Sites compare on, at offset 0 of a package-level
// variable, so the check is one instruction on a static address.
type Head struct {
	On   uint8 // read by sites; written only by setFlag, under the registry lock
	_    noCopy
	core *probe // the definition's descriptor
}

// probe is the descriptor of one definition: what Define was told, where the
// definition lives, and its sites. Fields below mu are guarded by the registry lock.
type probe struct {
	provider, name string
	args, types    []string
	kinds          []Kind
	sizes          []uint8      // of each argument's Go type (fbt: 0, as fires tell)
	module         string       // package that called Define
	fn             *FbtFunc     // an fbt probe's function; nil for any other
	dyn            *runtimeFunc // a run-time function probe's function; nil for any other

	hits atomic.Uint64 // fires not attributed to a site (through non-inlined code)
	// enabled as a whole: unattributed fires are delivered. Never set for a run-time
	// function probe, whose state is fprobe's (wholeOn).
	wide atomic.Bool
	cons atomic.Pointer[Consumers] // ring and aggregations fed by its fires; nil: none
	// ret1 and site1: the return address of the fire call of one of its sites (the
	// first bound) and that site, as byReturn maps them (a mapping that never
	// changes): the one site of most probes is named without the table's hash and
	// search. site1 is stored before ret1, read after it.
	ret1  atomic.Uintptr
	site1 atomic.Pointer[site]

	heads    []*Head // where the definition lives, once resolved
	searched bool    // data and bss were searched for it
	sites    []*site
	// wideOwners hold the definition on as a whole (guarded by the registry lock).
	wideOwners []*owner
}

// DefineIn creates and registers the descriptor of a definition of module; fn names
// the function of an fbt probe (nil for any other), alias a second provider:name it is
// found by (an fbt probe's USDT name).
func DefineIn(provider, name string, args []string, types []ArgT, module string, fn *FbtFunc, alias string) Head {
	p := &probe{provider: provider, name: name, args: args, module: module, fn: fn}
	if fn != nil && name == "return" {
		fn.ret = p // before any call of fn can read it: its package is initialising
	}
	for _, t := range types {
		p.types = append(p.types, t.Name)
		p.kinds = append(p.kinds, t.Kind)
		p.sizes = append(p.sizes, t.Size)
	}
	var on uint8
	if o := startOwner(); o != nil {
		on = 1
		p.wide.Store(true)
		p.wideOwners = []*owner{o}
	}
	reg.add(p, alias)
	followDefined(p)
	return Head{On: on, core: p}
}

// Admit decides whether a fire is delivered, and counts it. ret is the return address
// of the fire call, which names the site (s); a fire from code that was not inlined
// (or a site that could not be verified) is not attributed (s is nil) and counts on
// the definition. When it admits, the goroutine is left pinned to its P, pid, for the
// consumers (package consume's buffers are per P), cs (Consumers; nil: none): the
// caller must procUnpin.
func (h *Head) Admit(ret uintptr) (pid int, s *site, cs *Consumers, ok bool) {
	p := h.core
	if p == nil {
		return admitInit(ret)
	}
	// Branches, not a && chain: the compiler would make the comparison a boolean to
	// test again, on every fire.
	if p.ret1.Load() == ret {
		s = p.site1.Load()
	} else {
		s = reg.byReturn.lookup(ret)
	}
	if s != nil {
		if !s.on.Load() {
			return 0, nil, nil, false
		}
		pid = rt.ProcPin()
		s.hit(pid)
		return pid, s, p.cons.Load(), true
	}
	if !p.wide.Load() {
		return 0, nil, nil, false
	}
	p.hits.Add(1)
	return rt.ProcPin(), nil, p.cons.Load(), true
}

// admitInit is Admit while the definition's package initialises (its descriptor not
// yet stored in the variable): only a site, by its return address, and no consumers.
func admitInit(ret uintptr) (pid int, s *site, cs *Consumers, ok bool) {
	s = reg.byReturn.lookup(ret)
	if s == nil || !s.on.Load() {
		return 0, nil, nil, false
	}
	pid = rt.ProcPin()
	s.hit(pid)
	return pid, s, nil, true
}

// Consumers returns what the ring and aggregations want of this definition's fires;
// nil when nothing is attached (and before the definition is initialised).
func (h *Head) Consumers() *Consumers {
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
func setFlag(h *Head, on bool) {
	var v uint8
	if on {
		v = 1
	}
	h.On = v
}

// ArgT is a probe argument's Go type, as List names it, and its slot kind.
type ArgT struct {
	Name string
	Kind Kind
	Size uint8 // its Go type's size; 0 where fires set whole slots (fbt)
}
