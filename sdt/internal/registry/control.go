package registry

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// What the consumers and the control server reach of the registry: holds for their
// owners (connections, traces, aggregations), the list sdtctl shows, and
// subscriptions of their sinks. All of it goes through reg.holdLocked (owner.go) and
// the consumers snapshots (consume.go). Every function is safe to call from any
// goroutine; errors match ErrNoMatch, ErrMalformedSpec and ErrNotSupported.

// matchAll resolves specs to hold keys; any spec that fails fails them all. Call with
// reg.mu held.
func matchAll(specs []string) ([]holdKey, error) {
	reg.resolve()
	var all []holdKey
	for _, text := range specs {
		sp, err := parseSpec(text)
		if err != nil {
			return nil, err
		}
		sites, wides, err := reg.match(sp, text)
		if err != nil {
			return nil, err
		}
		all = append(all, keysOf(sites, wides)...)
	}
	return all, nil
}

// Hold takes o's hold on what every spec matches, all or nothing; n counts the sites
// it switched on, already those that were on before.
func Hold(o *Owner, specs []string) (n, already int, err error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	keys, err := matchAll(specs)
	if err != nil {
		return 0, 0, err
	}
	what := fmt.Sprint(specs)
	if err := switchable(what, keys); err != nil {
		return 0, 0, err
	}
	seen := map[holdKey]bool{}
	for _, k := range keys {
		switch {
		case seen[k]:
		case k.s != nil && k.s.on.Load():
			already++
		case k.s == nil && k.p != nil && k.p.wholeOn():
			already += k.p.points()
		}
		seen[k] = true
	}
	if n, err = reg.holdLocked(o, keys, true, what); err != nil {
		return 0, 0, err
	}
	return n, already, nil
}

// Unhold releases the holds of owners on what specs match; n counts the sites it
// switched off, kept those other owners keep on, and keptBy names them.
func Unhold(specs []string, owners ...*Owner) (n, kept int, keptBy []string, err error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	keys, err := matchAll(specs)
	if err != nil {
		return 0, 0, nil, err
	}
	what := fmt.Sprint(specs)
	for _, o := range owners {
		m, err := reg.holdLocked(o, keys, false, what)
		if err != nil {
			return n, 0, nil, err
		}
		n += m
	}
	if sh, ok := errors.AsType[*StillHeldError](stillHeld(what, keys)); ok {
		kept, keptBy = sh.Sites, sh.Holders
		if kept == 0 {
			kept = sh.Definitions // no site verified here: whole definitions
		}
	}
	return n, kept, keptBy, nil
}

// Release drops every hold of o, disabling what nobody else holds.
func Release(o *Owner) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var keys []holdKey
	for _, s := range reg.sites {
		if slices.Contains(s.owners, o) {
			keys = append(keys, holdKey{s: s})
		}
	}
	for _, p := range reg.probes {
		if slices.Contains(p.wideOwners, o) {
			keys = append(keys, holdKey{p: p})
		}
	}
	if _, err := reg.holdLocked(o, keys, false, "release of "+o.Name); err != nil {
		warnf("disabling what %s held: %v", o.Name, err)
	}
}

// Signatures gives the run-time function probes of the functions sigs describe
// their arguments' names and types (checked against their code when used).
func Signatures(sigs []FuncSig) { reg.signatures(sigs) }

// Flush delivers to their consumers every fire made before it that waits to be
// delivered (run-time functions' return events, which a goroutine delivers now and
// then): a consumer calls it before it reports what it has.
func Flush() { reg.flushReturns() }

// SubscribeFolds is Subscribe for a sink that folds one argument, value (argN or its
// name), of every fire of each probe and site, with no predicate: a probe that has
// that argument is not fed to s's Fire but to its Fold, given the argument's value
// and the fire's site index; one that has not (and a run-time function probe) is fed
// to Fire as Subscribe's sinks are.
func SubscribeFolds(spec, value string, s Folder) ([]*Probe, func(), error) {
	descs, sub, err := subscribeAs(spec, &subscription{sink: s, folder: s, value: value})
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return descs, func() { once.Do(sub.close) }, nil
}
