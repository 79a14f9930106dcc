package control

import (
	"github.com/gosdt/gosdt/arch"
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

// signatures hands the registry what sdtctl read of functions' signatures, in the
// registry's types.
func signatures(sigs []ctlproto.FuncSig) {
	out := make([]registry.FuncSig, len(sigs))
	for i, s := range sigs {
		o := registry.FuncSig{Func: s.Func, Spills: make([]arch.Spill, len(s.Spills)),
			Params: sigValues(s.Params), Results: sigValues(s.Results)}
		for j, sp := range s.Spills {
			o.Spills[j] = arch.Spill{Reg: sp.Reg, Size: sp.Size, Off: sp.Off}
		}
		out[i] = o
	}
	registry.Signatures(out)
}

func sigValues(vs []ctlproto.SigValue) []registry.SigValue {
	out := make([]registry.SigValue, len(vs))
	for i, v := range vs {
		out[i] = registry.SigValue{Name: v.Name, Type: v.Type, Kind: v.Kind, Words: make([]registry.SigWord, len(v.Words))}
		for j, w := range v.Words {
			out[i].Words[j] = registry.SigWord{Float: w.Float, Reg: w.Reg, Size: w.Size}
		}
	}
	return out
}
