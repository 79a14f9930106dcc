package calls

import (
	"strings"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// Kind is what a probe's fires are to a call.
type Kind uint8

const (
	Plain  Kind = iota // an event in the call open on its goroutine
	Entry              // opens a call of its function
	Return             // closes the call of its function; latency_ns first
	Timed              // a call that ends at the fire, latency_ns long
)

func (k Kind) String() string {
	return [...]string{"plain", "entry", "return", "timed"}[k]
}

// Probe is what pairing knows of the fires of one probe at one site: a Desc.
type Probe struct {
	Name                              string // provider:module:function:name
	Provider, Module, Function, Probe string
	Site                              uint64
	Kind                              Kind
	Args                              []ctlproto.Arg // names and Go types
	Kinds                             []byte         // ctlproto.ValInt ..
	// Results is where a return's results start among its arguments (after
	// latency_ns and panicking); Panicking the index of panicking, -1 without.
	Results, Panicking int
	fn                 string
}

// NewProbe classifies the probe a Desc describes.
func NewProbe(ds *ctlproto.Desc) *Probe {
	p := &Probe{Name: ds.Probe, Site: ds.Site, Args: ds.Args, Kinds: ds.Kinds, Panicking: -1}
	parts := strings.SplitN(ds.Probe, ":", 4)
	for len(parts) < 4 {
		parts = append([]string{""}, parts...)
	}
	p.Provider, p.Module, p.Function, p.Probe = parts[0], parts[1], parts[2], parts[3]
	p.fn = p.Provider + ":" + p.Module + ":" + p.Function
	timed := len(ds.Args) > 0 && ds.Args[0].Name == "latency_ns" && len(ds.Kinds) > 0 &&
		(ds.Kinds[0] == ctlproto.ValInt || ds.Kinds[0] == ctlproto.ValUint)
	switch {
	case p.Probe == "entry" && p.Function != "":
		p.Kind = Entry
	case timed && p.Probe == "return" && p.Function != "":
		p.Kind = Return
		p.Results = 1
		// panicking is a bool, or the 0 or 1 of an integer (an fbt return whose results
		// have types only its fires tell).
		if len(ds.Args) > 1 && ds.Args[1].Name == "panicking" && len(ds.Kinds) > 1 && ds.Kinds[1] != ctlproto.ValString {
			p.Panicking, p.Results = 1, 2
		}
	case timed:
		p.Kind, p.Results = Timed, 1
	}
	return p
}

// Func names the function of an entry or return probe: provider:module:function.
func (p *Probe) Func() string { return p.fn }
