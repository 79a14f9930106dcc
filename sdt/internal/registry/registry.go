package registry

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/hooks"
	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt/internal/fprobe"
	"github.com/gosdt/gosdt/sled"
)

// site is a physical site as the registry tracks it. Logical probes (what users enable:
// provider:module:function:name) are made of sites; patch rewrites sites.
type site struct {
	*sled.Site  // what discovery found (in reg.table): never changes
	sled.Holder // the function that holds the probe statement, once named (resolve)
	state       siteState
	cause       error         // stateSealFailed: the patch's error
	procMem     bool          // its text was written through /proc/self/mem
	probe       *probe        // the definition, once its package is initialised
	on          atomic.Bool   // fires from this site are delivered
	hits        atomic.Uint64 // fires delivered from this site on a P beyond reg.hitShards
	index       int           // its counters' index in reg.hitShards
	everOn      bool          // the text has held the enabled form (guarded by reg.mu)
	owners      []*owner      // who holds it on (guarded by reg.mu); on iff not empty
}

// siteState is what a site's text holds for good in this process, and why: the
// registry's own record, beside discovery's (sled.Site).
type siteState uint8

const (
	stateSled        siteState = iota // the canonical sled, switched by its toggle
	stateRefused                      // no sled was proven: Site.Refusal says why
	statePatchOff                     // left with its branch check: SDT_PATCH=off
	stateUnsupported                  // left with its branch check: no patching here
	stateSealFailed                   // the patch at start failed: cause
)

// Patchable reports whether the site holds its sled, switched by its toggle.
func (s *site) Patchable() bool { return s.state == stateSled }

// reason says why a site that is not Patchable keeps its branch check.
func (s *site) reason() string {
	switch s.state {
	case stateRefused:
		return s.Refusal.Detail
	case statePatchOff:
		return "patching switched off (SDT_PATCH=off)"
	case stateUnsupported:
		return fmt.Sprintf("patching not supported here: %v", patch.ErrNotSupported)
	case stateSealFailed:
		if s.Presealed {
			return "sealed in the binary file, and switching it on at start failed (it stays off): " + s.cause.Error()
		}
		return "sealing failed: " + s.cause.Error()
	}
	return ""
}

// note is a Patchable site's caveat: discovery's (arm64's flag load kept) and how its
// text is written.
func (s *site) note() string {
	if !s.procMem {
		return s.Note
	}
	return strings.TrimPrefix(s.Note+"; "+procMemNote, "; ")
}

// registry holds every definition and site, who holds them on and who consumes
// their fires. mu, its one lock, serialises Enable, Disable, List, Define and
// subscriptions; fire reads only atomics and what init built and never writes again
// (byReturn, hitShards).
type registry struct {
	mu        sync.Mutex
	mode      mode
	probes    []*probe
	sites     []*site
	unbound   []*site             // sites whose definition's package has not run its init yet
	described bool                // every site has been named (sled.Site.Describe)
	byName    map[string][]*probe // definitions by "provider:name" (and fbt probes by their USDT name)
	copies    map[string]*FbtFunc // fbt's traced copies (package + "." + tracedcopy id), by the function copied
	fbtFuncs  map[string]*FbtFunc // instrumented functions, by package + "." + function
	defined   map[*probe]bool     // every definition, to check a pointer read from a variable
	layout    sled.Layout
	table     *sled.Table

	runtime  map[string]*runtimeFunc // run-time function probes by function (runtimefbt.go)
	sigs     map[string]*FuncSig     // their signatures, as sdtctl read them
	draining bool                    // a goroutine delivers their return events

	subs []*subscription   // package consume's traces and aggregations (consume.go)
	ids  map[*probe]uint32 // the probe ids they are told

	// byReturn names the site of a fire call by its return address. Built once at
	// init, before any site can run, and never written again.
	byReturn returnTable

	// hitShards[p*hitStride+i] counts the fires of site i on P p (hits.go). Built
	// at init, before any site can run; the counters are written by fires.
	hitShards []uint64
	hitStride int
	// The cells at hand of folding fires (fold.go) are atHandTable, indexed as
	// hitShards: written under mu (renewAtHand) and by the fires of each P.
}

var reg registry

// add registers p under its provider:name, and alias too if not empty.
func (r *registry) add(p *probe, alias string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probes = append(r.probes, p)
	if r.byName == nil {
		r.byName = map[string][]*probe{}
		r.defined = map[*probe]bool{}
		r.copies = map[string]*FbtFunc{}
	}
	r.defined[p] = true
	for _, k := range []string{p.provider + ":" + p.name, alias} {
		if k != "" {
			r.byName[k] = append(r.byName[k], p)
		}
	}
}

// candidates is the definitions whose provider and name sp can match: found by name
// when both fields are literal (the common case, and a binary may have thousands of
// definitions), else all of them.
func (r *registry) candidates(sp spec.Spec) []*probe {
	if isLiteral(sp.Provider) && isLiteral(sp.Name) {
		return r.byName[sp.Provider+":"+sp.Name]
	}
	return r.probes
}

// isLiteral reports whether a spec's field is a name, no glob. A loop over bytes, not
// strings.ContainsAny (and its UTF-8 search), which every traced program would link
// for it: the glob's characters are ASCII, never inside a multi-byte character.
func isLiteral(field string) bool {
	for i := 0; i < len(field); i++ {
		switch field[i] {
		case '*', '?', '[', '\\':
			return false
		}
	}
	return field != ""
}

// resolve binds sites to their definitions, and finds definitions that have no
// bound site, now that the packages holding them may have run their init.
func (r *registry) resolve() {
	if !r.described {
		// Naming sites walks inline trees: done once, when first needed, not at init.
		for _, s := range r.sites {
			s.Holder = s.Describe()
		}
		r.described = true
	}
	rest, bound := r.unbound[:0], []*site(nil)
	for _, s := range r.unbound {
		// The variable may be being written right now: a client or a USDT tracer can
		// ask while later packages still run their init. Its descriptor was registered
		// (under r.mu) before Define returned, so a pointer found in the registry is a
		// whole one; anything else is tried again next time.
		h := headAt(s.Flag)
		p := h.core
		if p == nil || !r.defined[p] {
			rest = append(rest, s)
			continue
		}
		s.probe = p
		p.sites = append(p.sites, s)
		if s.Return != 0 && p.site1.Load() == nil {
			p.site1.Store(s)
			p.ret1.Store(s.Return)
		}
		p.addHead(h)
		bound = append(bound, s)
	}
	r.unbound = rest
	if len(bound) > 0 {
		r.nameSites(bound)
	}
	for _, p := range r.probes {
		if len(p.heads) == 0 && !p.searched {
			// A definition with no site we know of (only non-inlined or pointer uses):
			// find the variable by the descriptor pointer it holds.
			p.searched = true
			for _, w := range r.layout.FindWord(p.self()) {
				if h := headAt(w - coreOffset); h.core == p {
					p.addHead(h)
				}
			}
		}
	}
}

func (p *probe) addHead(h *Head) {
	for _, x := range p.heads {
		if x == h {
			return
		}
	}
	p.heads = append(p.heads, h)
}

// syncFlag sets the flag byte of p's definition: on when p is enabled as a whole or
// any site is, so that sites left with their branch check agree with sealed ones.
func (p *probe) syncFlag() {
	on := p.wide.Load()
	for _, s := range p.sites {
		on = on || s.on.Load()
	}
	for _, h := range p.heads {
		setFlag(h, on)
	}
}

// setBy takes (enable) or releases o's hold on what specText matches, in one batch.
// Enabling sets the flags before patching the sites, disabling patches first and
// clears the flags after, so that a site never jumps into a fire block whose
// definition says off. A disable that leaves sites on for other owners switches off
// the rest and returns a *StillHeldError naming those owners.
func (r *registry) setBy(o *owner, specText string, enable bool) (int, error) {
	sp, err := parseSpec(specText)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolve()
	sites, wides, err := r.match(sp, specText)
	if err != nil {
		return 0, err
	}
	keys := keysOf(sites, wides)
	if enable {
		if err := switchable(specText, keys); err != nil {
			return 0, err
		}
	}
	n, err := r.holdLocked(o, keys, enable, specText)
	if err != nil || enable {
		return n, err
	}
	return n, stillHeld(specText, keys)
}

// parseSpec parses a probe description, returning a *SpecError when it is malformed.
func parseSpec(text string) (spec.Spec, error) {
	sp, err := spec.Parse(text)
	if err != nil {
		if se, ok := errors.AsType[*spec.Error](err); ok {
			return sp, &SpecError{Spec: se.Spec, Pos: se.Pos, Reason: se.Reason}
		}
		return sp, err
	}
	return sp, nil
}

// parseListSpec is parseSpec, where "" matches every probe.
func parseListSpec(text string) (spec.Spec, error) {
	if text == "" {
		return spec.Spec{}, nil
	}
	return parseSpec(text)
}

// match returns the sites and the definitions (enabled as a whole) that sp (whose
// text is text) matches, making the run-time function probes it names; an error
// when it matches nothing. Call with r.mu held, after resolve.
func (r *registry) match(sp spec.Spec, text string) (sites []*site, wides []*probe, err error) {
	refused, err := r.matchRuntime(sp, text)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range r.candidates(sp) {
		// Provider and name first: a binary may have thousands of sites, and an
		// Enable should cost what the probes it names have, not what the binary has.
		if !spec.Match(sp.Provider, p.provider) || !spec.Match(sp.Name, p.name) {
			continue
		}
		for _, s := range p.sites {
			if sp.Match(p.provider, s.Module, s.Func, p.name) {
				sites = append(sites, s)
			}
		}
		if sp.Match(p.provider, p.module, p.wideFunc(), p.name) && p.placeable(sp) {
			wides = append(wides, p)
		}
	}
	if len(sites) == 0 && len(wides) == 0 {
		if refused != nil {
			return nil, nil, refused
		}
		return nil, nil, fmt.Errorf("%q: %w", text, ErrNoMatch)
	}
	return sites, wides, nil
}

// switchLocked switches sites and definitions (as a whole) on or off, in one batch,
// and returns how many sites (and points of run-time probes) changed state. what names the request in errors. Call
// with r.mu held. invariant.go states what it keeps, with holdLocked.
func (r *registry) switchLocked(sites []*site, wholes []*probe, enable bool, what string) (int, error) {
	var changed []*site
	var wides, touched []*probe
	seen := map[*probe]bool{}
	touch := func(p *probe) {
		if p != nil && !seen[p] {
			seen[p] = true
			touched = append(touched, p)
		}
	}
	for _, s := range sites {
		touch(s.probe)
		if s.on.Load() != enable {
			changed = append(changed, s)
		}
	}
	for _, p := range wholes {
		touch(p)
		if p.wholeOn() != enable {
			wides = append(wides, p)
		}
	}

	var writes []patch.Write
	for _, s := range changed {
		if s.Patchable() {
			// Only the toggle: laid out inside one aligned word, it is one atomic store.
			from, to := s.Switch()
			if !enable {
				from, to = to, from
			}
			writes = append(writes, patch.Write{Addr: s.Addr + uintptr(s.ToggleAt), Old: from, New: to})
		}
	}
	mark := func(on bool) { markSwitched(wides, changed, touched, on) }
	// Run-time function probes first: a request fails there more often (a limit, a
	// function's bytes changed), and the sites' batch is then not written at all.
	placed, unplaced := runtimeChanges(wides, enable)
	if enable {
		mark(true)
	}
	if len(placed) > 0 {
		if err := fprobe.Set(placed); err != nil {
			if enable {
				mark(false)
			}
			return 0, fmt.Errorf("run-time function probes for %q: %w", what, err)
		}
	}
	if len(writes) > 0 {
		if _, err := patch.Apply(writes, hooks.PatchOptions()); err != nil {
			if len(unplaced) > 0 {
				if err := fprobe.Set(unplaced); err != nil {
					warnf("taking back the run-time function probes for %q: %v", what, err)
				}
			}
			if enable {
				mark(false)
			}
			return 0, fmt.Errorf("patching %d sites for %q: %w", len(writes), what, err)
		}
	}
	for _, p := range wides {
		if enable && p.dyn != nil && p == p.dyn.ret {
			r.startDrain()
		}
	}
	if enable {
		for _, s := range changed {
			s.everOn = true
		}
	} else {
		mark(false)
	}
	// A run-time probe's points count as sites do: list and ps show each as one.
	n := len(changed)
	for _, p := range wides {
		n += p.points()
	}
	return n, nil
}

// markSwitched sets on for switchLocked's definitions as a whole (wides) and sites
// (changed), and the flag bytes of the definitions they touched. A function, not
// switchLocked's closure: the compiler copied the closure into each of its four calls.
func markSwitched(wides []*probe, changed []*site, touched []*probe, on bool) {
	for _, p := range wides {
		if p.dyn == nil { // a run-time probe's state is fprobe's, which Set writes
			p.wide.Store(on)
		}
	}
	for _, s := range changed {
		s.on.Store(on)
	}
	for _, p := range touched {
		p.syncFlag()
	}
}

// points is how many points of code a run-time function probe has (its entry, or its
// returns), as list shows them; 0 for a probe that is no run-time one.
func (p *probe) points() int {
	switch {
	case p.dyn == nil:
		return 0
	case p == p.dyn.ret:
		if p.dyn.f.ReturnErr() != nil {
			return 0
		}
		return len(p.dyn.f.Returns())
	}
	return 1
}

// Enable is sdt.Enable: the program's hold on what spec matches.
func Enable(spec string) (int, error) { return reg.setBy(programOwner, spec, true) }

// Disable is sdt.Disable: the program's hold released.
func Disable(spec string) (int, error) { return reg.setBy(programOwner, spec, false) }
