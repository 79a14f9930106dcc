package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/tracedcopy"
	"github.com/gosdt/gosdt/sled"
	"github.com/gosdt/gosdt/sled/offline"
)

// offlineNames names a binary's sites as the live process does (the registry, sdt/internal/registry): an
// fbt probe after its instrumented function and boundary, a site in a traced copy
// after the function copied, a generic function's type arguments as "[...]" (the
// runtime's way), so that a spec and a listing mean the same offline and live.
type offlineNames struct {
	defs   map[uint64]offline.Definition // by the variable's address
	copies map[string]offline.Definition // a traced copy (package path + "." + identifier) to its fbt probe
}

func newOfflineNames(defs []offline.Definition, sites []sled.Site) *offlineNames {
	n := &offlineNames{defs: map[uint64]offline.Definition{}, copies: map[string]offline.Definition{}}
	for _, d := range defs {
		n.defs[d.Flag] = d
	}
	// The copies are learnt from the fbt probes' own sites in them.
	for _, s := range sites {
		if d := n.defs[uint64(s.Flag)]; d.Function != "" {
			h := s.Describe()
			if id, _, ok := tracedcopy.Split(h.Func); ok {
				n.copies[h.Module+"."+id] = d
			}
		}
	}
	return n
}

// fbtBoundary is an fbt probe's name read from its USDT name (pkg__Func__entry), for a
// DefineFunc whose module and function arguments were not read: the live process
// names it entry or return, never by its USDT name.
func fbtBoundary(d offline.Definition) (string, bool) {
	if d.Provider != "fbt" {
		return "", false
	}
	i := strings.LastIndex(d.Name, "__")
	if i < 0 {
		return "", false
	}
	switch b := d.Name[i+2:]; b {
	case "entry", "return":
		return b, true
	}
	return "", false
}

// probeName is a probe's four fields.
type probeName struct{ provider, module, function, name string }

func (p probeName) String() string {
	return p.provider + ":" + p.module + ":" + p.function + ":" + p.name
}

// name names s's probe; h is s.Describe(). named is false when the probe's Define was
// not read: then only its module and function are known.
func (n *offlineNames) name(s sled.Site, h sled.Holder) (p probeName, named bool) {
	d, named := n.defs[uint64(s.Flag)]
	p = probeName{d.Provider, h.Module, h.Func, d.Name}
	if b, ok := fbtBoundary(d); ok && d.Function == "" {
		p.name = b
	}
	if d.Function != "" {
		p.module, p.function, p.name = d.Module, d.Function, d.Boundary
	} else if id, rest, ok := tracedcopy.Split(p.function); ok {
		if c, ok := n.copies[p.module+"."+id]; ok {
			p.module, p.function = c.Module, tracedcopy.Rename(c.Function, rest)
		}
	}
	p.function = printName(p.function)
	return p, named
}

// printName is a function's name as the runtime prints it: a generic function's type
// arguments (its shapes, in the symbol table) as "[...]", a go1.27 generic method of a
// generic type's two groups each so (functab.PrintName). The Gos gosdt reads differ
// only for names with "]...[" between their outer brackets, which no function that
// holds a site has (type:.eq.[16]T[...]): go1.27's reading serves both.
func printName(fn string) string { return functab.PrintName(fn, "go1.27") }

// offlineProbe is a probe of a binary file and its sites, as list BINARY shows it:
// each probe once, as the live list does.
type offlineProbe struct {
	Probe    string        `json:"probe"`    // provider:module:function:name, or ?:?:function:? when its Define was not read
	Variable string        `json:"variable"` // the probe definition's symbol
	Sites    []offlineSite `json:"sites"`
}

// groupSites gathers sites by probe and variable, in the order they were first met.
func groupSites(sites []offlineSite) []offlineProbe {
	var out []offlineProbe
	at := map[[2]string]int{}
	for _, s := range sites {
		name := s.Probe
		if name == "" {
			name = "?:?:" + s.Function + ":?"
		}
		k := [2]string{name, s.Variable}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, offlineProbe{Probe: name, Variable: s.Variable})
		}
		out[i].Sites = append(out[i].Sites, s)
	}
	return out
}

// printOffline prints a binary's probes, each followed by its sites.
func printOffline(w io.Writer, path string, sites []offlineSite) error {
	probes := groupSites(sites)
	fmt.Fprintf(w, "%s: %s, %s, read offline (provider and name from the Define calls\n"+
		"in package initialisation, where they can be read; function and line are those of the\n"+
		"probe statement, from the inline tree of the binary's function table)\n", path, plural(len(probes), "probe"), plural(len(sites), "site"))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE / SITE\tVARIABLE / KIND\tSEALABLE")
	for _, p := range probes {
		fmt.Fprintf(tw, "%s\t%s\t\n", p.Probe, p.Variable)
		for _, s := range p.Sites {
			sealable := "yes"
			switch {
			case s.Sealed:
				sealable = "sealed in the file"
			case s.Reason != "":
				sealable = "no: " + s.Reason
			}
			fmt.Fprintf(tw, "  %#x %s:%d\t%s\t%s\n", s.Addr, shortFile(s.File), s.Line, s.Kind, sealable)
		}
	}
	return tw.Flush()
}
