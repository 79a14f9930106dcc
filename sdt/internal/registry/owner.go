package registry

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Who holds a probe on. Like a Linux jump-label key's reference count, every enabler
// of a site or a definition is a reference on it: the program (Enable), the signal
// mode, each USDT tracer, each control connection and each of its streams. A site is
// on while anyone holds it; a disable drops only its own owner's hold. Every path
// goes through holdLocked, under reg.mu.

// owner is one enabler. Owners are compared by pointer; Name is what List shows.
// Package control makes the owners of its connections, traces and aggregations.
type owner = Owner

// newOwner returns a new owner; name says who it is in List and in errors.
func newOwner(name string) *owner { return &owner{Name: name} }

// The owners of the process: the program's Enable and Disable (and SDT_MODE=on,
// which starts as if the program had enabled everything), and the signal toggle.
var (
	programOwner = newOwner("program")
	signalOwner  = newOwner("signal")
)

// holdKey is what can be held on: a site, or a definition as a whole (fires that
// are not attributed to a site).
type holdKey struct {
	s *site
	p *probe
}

// owners is where k's holders are kept. Guarded by reg.mu.
func (k holdKey) owners() *[]*owner {
	if k.s != nil {
		return &k.s.owners
	}
	return &k.p.wideOwners
}

// ErrStillHeld is what a StillHeldError matches with errors.Is.
var ErrStillHeld = errors.New("still held on by others")

// StillHeldError is returned by Disable when the caller's hold is released but other
// owners still hold some of what the spec matches on: those sites stay on.
type StillHeldError struct {
	Spec        string
	Sites       int      // sites that stay on
	Definitions int      // definitions that stay on as a whole (fires not attributed to a site)
	Holders     []string // who holds them, e.g. "sdtctl pid 4242 trace"
}

func (e *StillHeldError) Error() string {
	what := fmt.Sprintf("%d sites", e.Sites)
	if e.Sites == 0 {
		what = fmt.Sprintf("%d definitions", e.Definitions)
	}
	return fmt.Sprintf("%q: %s stay on, held by %s", e.Spec, what, strings.Join(e.Holders, ", "))
}

func (e *StillHeldError) Is(target error) bool { return target == ErrStillHeld }

// holdLocked takes (on) or releases o's holds on keys and switches, in one batch,
// what changed state: a key goes on with its first holder and off with its last.
// It returns how many sites switched. On a patch error nothing changes. Call with
// reg.mu held, after resolve.
func (r *registry) holdLocked(o *owner, keys []holdKey, on bool, what string) (int, error) {
	if afterSwitch != nil {
		defer afterSwitch(r, what) // after the bookkeeping's undo on a failed patch too
	}
	var flip []holdKey
	seen := make(map[holdKey]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		hs := k.owners()
		i := slices.Index(*hs, o)
		switch {
		case on && i < 0:
			*hs = append(*hs, o)
			if len(*hs) == 1 {
				flip = append(flip, k)
			}
		case !on && i >= 0:
			*hs = slices.Delete(*hs, i, i+1)
			if len(*hs) == 0 {
				flip = append(flip, k)
			}
		default:
			continue
		}
	}
	var sites []*site
	var wides []*probe
	for _, k := range flip {
		if k.s != nil {
			sites = append(sites, k.s)
		} else {
			wides = append(wides, k.p)
		}
	}
	n, err := r.switchLocked(sites, wides, on, what)
	if err != nil {
		// Undo the bookkeeping: the text did not change, so neither do the holds.
		for k := range seen {
			hs := k.owners()
			if on {
				if i := slices.Index(*hs, o); i >= 0 {
					*hs = slices.Delete(*hs, i, i+1)
				}
			} else if slices.Contains(flip, k) {
				*hs = append(*hs, o)
			}
		}
		return 0, err
	}
	return n, nil
}

// stillHeld describes the keys that other owners hold on, or returns nil when none
// is. Call with reg.mu held.
func stillHeld(what string, keys []holdKey) error {
	var e StillHeldError
	seen := map[holdKey]bool{}
	for _, k := range keys {
		hs := *k.owners()
		if seen[k] || len(hs) == 0 {
			continue
		}
		seen[k] = true
		if k.s != nil {
			e.Sites++
		} else {
			e.Definitions++
		}
		for _, o := range hs {
			if !slices.Contains(e.Holders, o.Name) {
				e.Holders = append(e.Holders, o.Name)
			}
		}
	}
	if e.Sites == 0 && e.Definitions == 0 {
		return nil
	}
	e.Spec = what
	sort.Slice(e.Holders, func(i, j int) bool { return e.Holders[i] < e.Holders[j] })
	return &e
}

// switchable returns an ErrNotSupported error when nothing keys name can be
// switched: no patchable site, and no definition whose variable was found (js/wasm
// has no data segment to search, so a definition without a verified site cannot be
// located, and setting its flag is impossible). Call with reg.mu held.
func switchable(what string, keys []holdKey) error {
	for _, k := range keys {
		p := k.p
		if k.s != nil {
			if k.s.Patchable() {
				return nil
			}
			p = k.s.probe
		}
		if p != nil && (len(p.heads) > 0 || p.dyn != nil) {
			return nil
		}
	}
	return fmt.Errorf("%q: %w: no site of it was verified and its variable could not be located, so nothing can switch it", what, ErrNotSupported)
}

// holderNames is who holds k on, for List.
func holderNames(k holdKey) []string {
	hs := *k.owners()
	if len(hs) == 0 {
		return nil
	}
	names := make([]string, len(hs))
	for i, o := range hs {
		names[i] = o.Name
	}
	return names
}

// keysOf turns matched sites and definitions into hold keys.
//
// Not inlined: its two callers each carried a copy of its loops.
//
//go:noinline
func keysOf(sites []*site, wides []*probe) []holdKey {
	keys := make([]holdKey, 0, len(sites)+len(wides))
	for _, s := range sites {
		keys = append(keys, holdKey{s: s})
	}
	for _, p := range wides {
		keys = append(keys, holdKey{p: p})
	}
	return keys
}
