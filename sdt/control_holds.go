package sdt

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// What control clients hold: sdtctl enable holds for the process (persistOwner),
// a connection and each of its traces and stats for their own lives. All of it goes
// through reg.holdLocked (owner.go).

// persistOwner holds what sdtctl enable switched on: it outlives the connection,
// until an sdtctl disable releases it.
var persistOwner = newOwner("sdtctl enable")

// matchKeys resolves a spec to hold keys. Call with reg.mu held.
func matchKeys(specText string) ([]holdKey, error) {
	sp, err := parseSpec(specText)
	if err != nil {
		return nil, ctlproto.Errorf(ctlproto.CodeBadSpec, "%v", err)
	}
	reg.resolve()
	sites, wides := reg.match(sp)
	if len(sites) == 0 && len(wides) == 0 {
		return nil, ctlproto.Errorf(ctlproto.CodeNoMatch, "%q matches no probe", specText)
	}
	return keysOf(sites, wides), nil
}

// matchAll resolves specs to hold keys; any spec that fails fails them all. Call with
// reg.mu held.
func matchAll(specs []string) ([]holdKey, error) {
	var all []holdKey
	for _, sp := range specs {
		keys, err := matchKeys(sp)
		if err != nil {
			return nil, err
		}
		all = append(all, keys...)
	}
	return all, nil
}

// hold enables what specs match on behalf of o. All specs are checked before
// anything changes. n counts the sites switched on; already the sites that matched
// but were on before (held by another owner, or by o itself).
func hold(o *owner, specs []string) (n, already int, err error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	keys, err := matchAll(specs)
	if err != nil {
		return 0, 0, err
	}
	if err := switchable(fmt.Sprint(specs), keys); err != nil {
		return 0, 0, err
	}
	seen := map[holdKey]bool{}
	for _, k := range keys {
		if k.s != nil && !seen[k] && k.s.on.Load() {
			already++
		}
		seen[k] = true
	}
	n, err = reg.holdLocked(o, keys, true, fmt.Sprint(specs))
	if err != nil {
		return 0, 0, err
	}
	return n, already, nil
}

// release drops all of o's holds, disabling what nobody else holds.
func release(o *owner) {
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
	if _, err := reg.holdLocked(o, keys, false, "release of "+o.name); err != nil {
		warnf("control: disabling what %s held: %v", o.name, err)
	}
}

// unhold is an explicit disable from a client: it releases that connection's and the
// persistent (sdtctl enable) holds on what specs match and disables what no other
// owner holds. kept counts the keys others still hold, keptBy names those owners.
func unhold(o *owner, specs []string) (n, kept int, keptBy []string, err error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	keys, err := matchAll(specs)
	if err != nil {
		return 0, 0, nil, err
	}
	what := fmt.Sprint(specs)
	if n, err = reg.holdLocked(o, keys, false, what); err != nil {
		return 0, 0, nil, err
	}
	m, err := reg.holdLocked(persistOwner, keys, false, what)
	if err != nil {
		return n, 0, nil, err
	}
	var sh *StillHeldError
	if errors.As(stillHeld(what, keys), &sh) {
		kept, keptBy = sh.Sites, sh.Holders
		if kept == 0 {
			kept = sh.Definitions // no site verified here: whole definitions
		}
	}
	return n + m, kept, keptBy, nil
}
