package sdt

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/bridge"

	// The control plane: linked into every program that uses probes, so that sdtctl
	// reaches any of them with no change to its code. It sets bridge.Start.
	_ "github.com/gosdt/gosdt/sdt/control"
)

// What package control reaches of the registry: holds for its owners (connections,
// traces, aggregations), the list sdtctl shows, and subscriptions of its sinks. All of
// it goes through reg.holdLocked (owner.go) and the consumers snapshots (consume.go).

// startControl hands the registry, now complete, to the control plane: called last
// by init.
func startControl() { bridge.Start(controlPlane{}) }

type controlPlane struct{}

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

func (controlPlane) Hold(o *owner, specs []string) (n, already int, err error) {
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
		case k.s == nil && k.p != nil && k.p.wide.Load():
			already += k.p.points()
		}
		seen[k] = true
	}
	if n, err = reg.holdLocked(o, keys, true, what); err != nil {
		return 0, 0, err
	}
	return n, already, nil
}

func (controlPlane) Unhold(specs []string, owners ...*owner) (n, kept int, keptBy []string, err error) {
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
	var sh *StillHeldError
	if errors.As(stillHeld(what, keys), &sh) {
		kept, keptBy = sh.Sites, sh.Holders
		if kept == 0 {
			kept = sh.Definitions // no site verified here: whole definitions
		}
	}
	return n, kept, keptBy, nil
}

func (controlPlane) Release(o *owner) { release(o) }

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
	if _, err := reg.holdLocked(o, keys, false, "release of "+o.Name); err != nil {
		warnf("disabling what %s held: %v", o.Name, err)
	}
}

func (controlPlane) List(spec string, each func([]ctlproto.Probe) error) error {
	return listWire(spec, each)
}

// listWire is List in the protocol's types, a chunk at a time.
func listWire(spec string, each func([]ctlproto.Probe) error) error {
	return listEach(spec, func(list []ProbeInfo) error {
		out := make([]ctlproto.Probe, 0, len(list))
		for _, pi := range list {
			p := ctlproto.Probe{Name: pi.String(), Kind: pi.Kind, Enabled: pi.Enabled, Hits: pi.Hits, HeldBy: pi.HeldBy, Sites: []ctlproto.Site{}}
			for _, a := range pi.Args {
				p.Args = append(p.Args, ctlproto.Arg{Name: a.Name, Type: a.Type})
			}
			for _, s := range pi.Sites {
				p.Sites = append(p.Sites, ctlproto.Site{Addr: uint64(s.Addr), File: s.File, Line: s.Line, Kind: s.Kind,
					State: s.State.String(), Enabled: s.Enabled, Reason: s.Reason, Hits: s.Hits, HeldBy: s.HeldBy})
			}
			out = append(out, p)
		}
		return each(out)
	})
}

func (controlPlane) Signatures(sigs []ctlproto.FuncSig) { reg.signatures(sigs) }

func (controlPlane) Flush() { reg.flushReturns() }

func (controlPlane) Subscribe(spec string, s bridge.Sink) ([]*bridge.Probe, func(), error) {
	return subscribe(spec, s)
}

func (controlPlane) SubscribeCounts(spec string, s bridge.Sink) ([]*bridge.Probe, func([]bridge.Count) []bridge.Count, func(), error) {
	return subscribeCounts(spec, s)
}

func (controlPlane) SubscribeFolds(spec, value string, s bridge.Folder) ([]*bridge.Probe, func(), error) {
	descs, sub, err := subscribeAs(spec, &subscription{sink: s, folder: s, value: value})
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return descs, func() { once.Do(sub.close) }, nil
}

func (controlPlane) Follow(spec string, s bridge.Sink, grew func([]*bridge.Probe) error) (func(*bridge.Owner) ([]*bridge.Probe, error), func(), error) {
	return follow(spec, s, grew)
}
