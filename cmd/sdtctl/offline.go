package main

import (
	"debug/elf"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/gosdt/gosdt/internal/seal"
	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sled"
)

// offlineSite is a probe site found in a binary file without running it.
type offlineSite struct {
	Probe    string `json:"probe,omitempty"` // provider:module:function:name, when its Define was read
	Addr     uint64 `json:"addr"`
	Variable string `json:"variable"` // the probe definition's symbol
	Function string `json:"function"` // the function that holds the probe statement (inlining resolved, with DWARF)
	File     string `json:"file"`
	Line     int    `json:"line"`
	Kind     string `json:"kind"`             // fire, or guard (if p.Enabled())
	Reason   string `json:"reason,omitempty"` // why it would keep its branch check
	Sealed   bool   `json:"sealed,omitempty"` // the file holds its sled (sdtctl seal)
}

// listBinary finds the probe sites of an ELF file with the matchers the runtime uses
// (sled.DiscoverFile). Provider and name are arguments of Define, known only at run
// time: offline, a site is named by its definition's variable.
func listBinary(path string, specs []string, asJSON bool, w io.Writer) error {
	var sp *spec.Spec
	if len(specs) == 1 {
		s, err := spec.Parse(specs[0])
		if err != nil {
			return fail(exitBadSpec, "%v", err)
		}
		sp = &s
	}
	t, err := sled.DiscoverFile(path, seal.Config)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	symAt := symbolizer(path)
	names := map[uint64]sled.Definition{}
	defs, _ := sled.DefinitionsFile(path, seal.ProbePackage) // without, sites go by variable
	for _, d := range defs {
		names[d.Flag] = d
	}
	var out []offlineSite
	for _, s := range t.Sites {
		s.Describe()
		d, named := names[uint64(s.Flag)]
		if sp != nil && !sp.Match(d.Provider, s.Module, s.Func, d.Name) && (named || !sp.Match("", s.Module, s.Func, "")) {
			continue
		}
		o := offlineSite{Addr: uint64(s.Addr), Variable: symAt(uint64(s.Flag)),
			Function: s.Func, File: s.File, Line: s.Line, Kind: s.Kind.String(), Reason: s.Reason, Sealed: s.Presealed}
		if named {
			o.Probe = d.Provider + ":" + s.Module + ":" + s.Func + ":" + d.Name
		}
		out = append(out, o)
	}
	if asJSON {
		for _, s := range out {
			printJSON(w, s)
		}
		return nil
	}
	fmt.Fprintf(w, "%s: %d probe sites, read offline (provider and name from the Define calls\n"+
		"in package initialisation, where they can be read; function and line are those of the\n"+
		"probe statement, from the binary's DWARF, or without it of the code that holds the site)\n", path, len(out))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tVARIABLE\tADDR\tFILE:LINE\tKIND\tSEALABLE")
	for _, s := range out {
		sealable := "yes"
		switch {
		case s.Sealed:
			sealable = "sealed in the file"
		case s.Reason != "":
			sealable = "no: " + s.Reason
		}
		probe := s.Probe
		if probe == "" {
			probe = "?:?:" + s.Function + ":?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%#x\t%s:%d\t%s\t%s\n", probe, s.Variable, s.Addr, shortFile(s.File), s.Line, s.Kind, sealable)
	}
	return tw.Flush()
}

// symbolizer names data addresses from the file's symbol table (stripped: the address).
func symbolizer(path string) func(uint64) string {
	var syms []elf.Symbol
	if f, err := elf.Open(path); err == nil {
		syms, _ = f.Symbols()
		f.Close()
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].Value < syms[j].Value })
	return func(a uint64) string {
		i := sort.Search(len(syms), func(i int) bool { return syms[i].Value > a }) - 1
		if i >= 0 && a < syms[i].Value+max(syms[i].Size, 1) {
			return syms[i].Name
		}
		return fmt.Sprintf("%#x", a)
	}
}
