package registry

import (
	"fmt"
	"os"
	"sync"

	"github.com/gosdt/gosdt/internal/spec"
)

// A command that sdtctl starts to trace it from its first instruction (sdtctl
// trace|stat SPEC -- CMD) has SDT_FOLLOW set (package consume reads the request in
// it). Its probes are defined by the package-level variables of the packages that use
// them, which are initialised after sdt: at sdt's init nothing can be matched by name
// yet, and a site is bound to its definition only once the variable holding it is
// written, after Define returns. So from sdt's init until sdtctl connects:
//   - every site is on (as SDT_MODE=on has it), held by followOwner;
//   - each definition is on as a whole as it is defined, and, when the spec's provider,
//     module and name match it and its function field is a wildcard, the follow sink is
//     attached to it there and then (followDefined), before its package's init can fire
//     it: a probe fired in a package's init reaches the trace;
//   - when sdtctl connects (settle), the spec is matched as any trace's is, its probes
//     held by the consumer's own owner, and followOwner's holds are dropped.
//
// A spec naming a function cannot be told before sites are bound: its fires before
// sdtctl connects are counted (the probes' hits) but not recorded, and sdtctl says so.

// followOwner holds every site on until sdtctl takes over; nil unless SDT_FOLLOW is
// set.
var followOwner *owner

func init() {
	if _, ok := os.LookupEnv("SDT_FOLLOW"); ok {
		followOwner = newOwner("sdtctl (from the start)")
	}
}

// startOwner is who holds every site and definition on from the start: the program
// (SDT_MODE=on), sdtctl (SDT_FOLLOW), or nobody (nil).
func startOwner() *owner {
	if reg.mode == modeOn {
		return programOwner
	}
	return followOwner
}

// followSub is the follow sink's subscription while it takes definitions as they come.
var followSub struct {
	sync.Mutex
	sp   spec.Spec
	sub  *subscription
	grew func([]*Probe) error // told of the probes covered before a fire of them can come
	all  []*Probe
	open bool
}

// Follow attaches sink to every definition spec matches from now on (see above), for
// a command sdtctl started (SDT_FOLLOW); grew is told of each probe before a fire of
// it can come. settle matches spec precisely, as Subscribe and Hold do, holds it for
// o once sdtctl has connected, and drops followOwner's holds. With sink nil it gives
// up: what init switched on for sdtctl is switched off.
func Follow(specText string, sink Sink, grew func([]*Probe) error) (settle func(o *owner) ([]*Probe, error), cancel func(), err error) {
	if sink == nil {
		// given up (no request, or one that cannot be opened): nothing is held for it
		Release(followOwner)
		return nil, nil, nil
	}
	sp, err := parseSpec(specText)
	if err != nil {
		Release(followOwner)
		return nil, nil, err
	}
	sub := &subscription{sink: sink, filters: map[*probe]*filter{}}
	followSub.Lock()
	followSub.sp, followSub.sub, followSub.grew, followSub.open = sp, sub, grew, true
	followSub.Unlock()
	reg.mu.Lock()
	reg.subs = append(reg.subs, sub)
	reg.mu.Unlock()
	followRuntime(sp, specText)
	settle = func(o *owner) ([]*Probe, error) {
		reg.mu.Lock()
		reg.resolve()
		refused, err := reg.matchRuntime(sp, specText) // run-time function probes: from here on
		if err != nil {
			reg.mu.Unlock()
			return nil, err
		}
		fs, order := matchFilters(sp)
		descs := make([]*Probe, len(order))
		for i, p := range order {
			descs[i] = p.describe(reg.probeID(p))
		}
		reg.mu.Unlock()
		if len(fs) == 0 {
			if refused != nil {
				return nil, refused
			}
			return nil, fmt.Errorf("%q: %w", specText, ErrNoMatch)
		}
		followSub.Lock()
		followSub.open = false // from now on, the spec's own match
		followSub.Unlock()
		if err := grew(descs); err != nil {
			return nil, err
		}
		if _, _, err := Hold(o, []string{specText}); err != nil {
			return nil, err
		}
		// From the filters taken as definitions came to the spec's own, per probe at
		// once; then what only followOwner held goes off.
		reg.mu.Lock()
		old := sub.filters
		sub.filters = fs
		for p, f := range fs {
			old[p] = f
		}
		reg.rebuild(old)
		reg.mu.Unlock()
		Release(followOwner)
		return descs, nil
	}
	var once sync.Once
	cancel = func() {
		once.Do(func() {
			followSub.Lock()
			followSub.open = false
			followSub.Unlock()
			sub.close()
			Release(followOwner)
		})
	}
	return settle, cancel, nil
}

// followDefined attaches the follow sink to p, just defined, when the spec matches it
// whatever its sites' functions.
func followDefined(p *probe) {
	if followOwner == nil {
		return
	}
	followSub.Lock()
	defer followSub.Unlock()
	sp := followSub.sp
	if !followSub.open || (sp.Function != "" && sp.Function != "*") || !sp.Match(p.provider, p.module, "", p.name) {
		return
	}
	reg.mu.Lock()
	d := p.describe(reg.probeID(p))
	reg.mu.Unlock()
	followSub.all = append(followSub.all, d)
	if followSub.grew(followSub.all) != nil {
		// the options cannot take it (an argument --by names that it lacks): settle says
		followSub.all = followSub.all[:len(followSub.all)-1]
		return
	}
	reg.mu.Lock()
	f := &filter{all: true, wide: true}
	followSub.sub.filters[p] = f
	reg.rebuild(map[*probe]*filter{p: f})
	reg.mu.Unlock()
}

// followRuntime places the run-time function probes spec names at once, held by
// followOwner and attached to the follow sink, so that the command's first calls of
// those functions reach the trace. Nothing is placed where the spec names none (or
// too many: settle says so).
func followRuntime(sp spec.Spec, specText string) {
	if followOwner == nil || !isRuntimeSpec(sp) {
		return
	}
	reg.mu.Lock()
	var ps []*probe
	var descs []*Probe
	if _, err := reg.matchRuntime(sp, specText); err == nil {
		for _, p := range reg.probes {
			if p.dyn != nil && p.placeable(sp) && sp.Match(p.provider, p.module, p.wideFunc(), p.name) {
				ps = append(ps, p)
				descs = append(descs, p.describe(reg.probeID(p)))
			}
		}
	}
	reg.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	followSub.Lock()
	defer followSub.Unlock()
	followSub.all = append(followSub.all, descs...)
	if followSub.grew(followSub.all) != nil {
		followSub.all = followSub.all[:len(followSub.all)-len(descs)]
		return // the options cannot take them: settle says why
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	fs := map[*probe]*filter{}
	keys := make([]holdKey, len(ps))
	for i, p := range ps {
		fs[p] = &filter{all: true, wide: true}
		followSub.sub.filters[p] = fs[p]
		keys[i] = holdKey{p: p}
	}
	reg.rebuild(fs)
	if _, err := reg.holdLocked(followOwner, keys, true, specText); err != nil {
		warnf("placing run-time function probes for %q at start: %v", specText, err)
	}
}
