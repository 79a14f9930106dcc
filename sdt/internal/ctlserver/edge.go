package ctlserver

import (
	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// The registry's answers in the protocol's types: the conversion happens here, at the
// server's edge, and the registry keeps its own.

// listWire is registry.ListEach in the protocol's types, a chunk at a time. Not
// inlined: its two callers would each carry a copy of the conversion.
//
//go:noinline
func listWire(spec string, each func([]ctlproto.Probe) error) error {
	return registry.ListEach(spec, func(list []registry.ProbeInfo) error {
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
