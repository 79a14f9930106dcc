package registry

import (
	"cmp"

	"slices"
	"sort"

	"github.com/gosdt/gosdt/internal/spec"
)

// ProbeInfo describes one logical probe: a definition as it appears in one function.
type ProbeInfo struct {
	Provider, Module, Function, Name string
	Kind                             string // "static", or an fbt probe's: "build" (placed by rules), "runtime" (placed while running)
	Args                             []ArgInfo
	Enabled                          bool     // at least one of its sites (or the definition as a whole) is on
	Hits                             uint64   // fires delivered
	HeldBy                           []string // who holds its sites (or it as a whole) on
	Sites                            []SiteInfo
}

// ArgInfo is a probe argument's name and Go type.
type ArgInfo struct{ Name, Type string }

// SiteState is what a site's text holds.
type SiteState uint8

const (
	SealedOff  SiteState = iota // canonical sled, jumping over the fire block
	SealedOn                    // canonical sled, falling into the fire block
	BranchOnly                  // the compiler's check, left alone; Reason says why
	Unpatched                   // a run-time probe's point: the function's own code
	Patched                     // a run-time probe's point: a call to its stub written
	Refused                     // a run-time probe's point that may take none; Reason says why
)

func (s SiteState) String() string {
	switch s {
	case SealedOff:
		return "sealed-off"
	case SealedOn:
		return "sealed-on"
	case Unpatched:
		return "unpatched"
	case Patched:
		return "patched"
	case Refused:
		return "refused"
	}
	return "branch-only"
}

// SiteInfo describes one physical site.
type SiteInfo struct {
	Addr    uintptr
	File    string
	Line    int
	Kind    string // "fire": Probe/Fire; "guard": if p.Enabled() { ... }
	State   SiteState
	Enabled bool
	Reason  string // why a branch-only site is not sealed
	Note    string // a sealed site's caveat (arm64: the flag load kept, and why)
	Hits    uint64
	HeldBy  []string // who holds it on: "program", "signal", "usdt ...", "sdtctl pid N ..."
}

// String is the probe's full name.
func (pi ProbeInfo) String() string {
	return pi.Provider + ":" + pi.Module + ":" + pi.Function + ":" + pi.Name
}

// List describes the logical probes that spec matches ("" matches all), sorted by name.
// A definition whose fires come from code that could not be attributed to a site
// (non-inlined builds, pointer uses) is listed with an empty function. Functions that
// may take run-time probes (fbt specs naming a package or a function) follow, in the
// order of their addresses. Hits count every fire made before the call (run-time
// return events included).
func List(spec string) ([]ProbeInfo, error) {
	var out []ProbeInfo
	err := ListEach(spec, func(ps []ProbeInfo) error {
		out = append(out, ps...)
		return nil
	})
	return out, err
}

// listChunk is how many functions' run-time probes ListEach describes at a time: a
// list of every function of a large program is tens of thousands, made and sent a
// chunk at a time so that the process never holds all of them.
const listChunk = 512

// ListEach calls each with the probes List describes, a chunk at a time: the
// registry's definitions first, then the functions that may take run-time probes.
// The registry's lock is not held while each runs.
func ListEach(spec string, each func([]ProbeInfo) error) error {
	sp, err := parseListSpec(spec)
	if err != nil {
		return err
	}
	reg.flushReturns() // Hits count the return events made before the list
	reg.mu.Lock()
	reg.resolve()
	out := reg.listDefined(sp)
	cands, sigs := reg.runtimeToList(sp)
	reg.mu.Unlock()
	if err := each(out); err != nil {
		return err
	}
	for len(cands) > 0 {
		n := min(len(cands), listChunk)
		if err := each(describeRuntime(sp, cands[:n], sigs)); err != nil {
			return err
		}
		cands = cands[n:]
	}
	return nil
}

// listDefined describes the registry's definitions that sp matches, sorted. Call
// with r.mu held, after resolve.
func (r *registry) listDefined(sp spec.Spec) []ProbeInfo {
	var out []ProbeInfo
	for _, p := range r.probes {
		byFunc := map[[2]string]*ProbeInfo{}
		var order [][2]string
		for _, s := range p.sites {
			if !sp.Match(p.provider, s.Module, s.Func, p.name) {
				continue
			}
			k := [2]string{s.Module, s.Func}
			pi := byFunc[k]
			if pi == nil {
				pi = p.info(s.Module, s.Func)
				byFunc[k] = pi
				order = append(order, k)
			}
			si := s.info()
			pi.Sites = append(pi.Sites, si)
			pi.Hits += si.Hits
			pi.Enabled = pi.Enabled || si.Enabled
			for _, h := range si.HeldBy {
				if !slices.Contains(pi.HeldBy, h) {
					pi.HeldBy = append(pi.HeldBy, h)
				}
			}
		}
		for _, k := range order {
			out = append(out, *byFunc[k])
		}
		if (len(p.sites) == 0 || p.hitsNow() > 0) && sp.Match(p.provider, p.module, p.wideFunc(), p.name) {
			pi := p.info(p.module, p.wideFunc())
			pi.Hits, pi.Enabled = p.hitsNow(), p.wholeOn()
			pi.HeldBy = holderNames(holdKey{p: p})
			if p.dyn != nil {
				pi.Sites = p.dyn.points(p, nil)
			}
			out = append(out, *pi)
		}
	}
	// sort, not slices: slices.SortStableFunc would instantiate 9 KB of sorting code
	// for ProbeInfo in every program that imports sdt.
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Module, b.Module), cmp.Compare(a.Function, b.Function)) < 0
	})
	return out
}

// info is p as List describes it. Not inlined: its two callers each carried a copy.
//
//go:noinline
func (p *probe) info(module, fn string) *ProbeInfo {
	pi := &ProbeInfo{Provider: p.provider, Module: module, Function: fn, Name: p.name, Kind: "static"}
	switch {
	case p.fn != nil:
		pi.Kind = "build"
	case p.dyn != nil:
		pi.Kind = "runtime"
	}
	for i, a := range p.args {
		pi.Args = append(pi.Args, ArgInfo{Name: a, Type: p.types[i]})
	}
	return pi
}

func (s *site) info() SiteInfo {
	si := SiteInfo{Addr: s.Addr, File: s.File, Line: s.Line, Kind: s.Kind.String(),
		Enabled: s.on.Load(), Reason: s.reason(), Hits: s.hitCount(), State: BranchOnly,
		HeldBy: holderNames(holdKey{s: s})}
	if s.Patchable() {
		si.Note = s.note()
		si.State = SealedOff
		if si.Enabled {
			si.State = SealedOn
		}
	}
	return si
}
