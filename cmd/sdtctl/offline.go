package main

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sled/offline"
)

// offlineSite is a probe site found in a binary file without running it.
type offlineSite struct {
	Probe    string `json:"-"` // provider:module:function:name, when its Define was read
	Addr     uint64 `json:"addr"`
	Variable string `json:"-"`        // the probe definition's symbol
	Function string `json:"function"` // the function that holds the probe statement (inlining resolved)
	File     string `json:"file"`
	Line     int    `json:"line"`
	Kind     string `json:"kind"`             // fire, or guard (if p.Enabled())
	Reason   string `json:"reason,omitempty"` // why it would keep its branch check
	Sealed   bool   `json:"sealed,omitempty"` // the file holds its sled (sdtctl seal)
}

// listBinary finds the probe sites of an ELF file with the matchers the runtime uses
// (package sled/offline). Provider and name are arguments of Define, known only at run
// time: offline, a site is named by its definition's variable. What is wrong with a
// sealed binary's site table is said on stderr, and the sites listed are those the
// program will find at start without it.
func listBinary(path string, specs []string, asJSON bool, w, stderr io.Writer) error {
	var sp *spec.Spec
	if len(specs) == 1 {
		s, err := spec.Parse(specs[0])
		if err != nil {
			return fail(exitBadSpec, "%v", err)
		}
		sp = &s
	}
	if err := checkELF(path); err != nil {
		return err
	}
	t, err := offline.Discover(path)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	if t.Warning != "" {
		fmt.Fprintf(stderr, "sdtctl: %s\n", t.Warning)
	}
	symAt := symbolizer(path)
	defs, _ := offline.Definitions(path) // without, sites go by variable
	names := newOfflineNames(defs, t.Sites)
	var out []offlineSite
	for _, s := range t.Sites {
		h := s.Describe()
		pn, named := names.name(s, h)
		if sp != nil && !sp.Match(pn.provider, pn.module, pn.function, pn.name) && (named || !sp.Match("", pn.module, pn.function, "")) {
			continue
		}
		o := offlineSite{Addr: uint64(s.Addr), Variable: symAt(uint64(s.Flag)),
			Function: pn.function, File: h.File, Line: h.Line, Kind: s.Kind.String(), Reason: s.Refusal.Detail, Sealed: s.Presealed}
		if named {
			o.Probe = pn.String()
		}
		out = append(out, o)
	}
	if sp != nil && len(out) == 0 {
		return fail(exitNoMatch, "%s: %q matches no probe site", path, specs[0])
	}
	if asJSON {
		for _, p := range groupSites(out) {
			printJSON(w, p)
		}
		return nil
	}
	return printOffline(w, path, out)
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

// checkELF refuses a file that is not an ELF file, naming it and saying what it begins
// with, before anything reads it as one.
func checkELF(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	if n < 4 || string(magic[:]) != "\x7fELF" {
		return fail(exitError, "%s: not an ELF executable (it begins %q): sdtctl reads linux Go programs", path, magic[:n])
	}
	return nil
}
