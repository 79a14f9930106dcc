package main

import (
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/gosdt/gosdt/arch/amd64"
	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sled"
	"golang.org/x/arch/x86/x86asm"
)

// offlineSite is a probe site found in a binary file without running it.
type offlineSite struct {
	Addr     uint64 `json:"addr"`
	Variable string `json:"variable"` // the probe definition's symbol
	Function string `json:"function"` // the function whose code holds the site
	File     string `json:"file"`
	Line     int    `json:"line"`
	Kind     string `json:"kind"` // fire, or guard (if p.Enabled())
}

const firePrefix = "github.com/gosdt/gosdt/sdt.(*P"

// listBinary finds the probe sites of an ELF file as discovery would at run time:
// CMPB $0, flag(SB) on a variable in .data/.bss followed by a JE/JNE whose block
// calls an sdt fire method with that variable as receiver. Provider and name are
// arguments of Define, known only at run time: sites are named by the variable.
func listBinary(path string, specs []string, asJSON bool, w io.Writer) error {
	f, err := elf.Open(path)
	if err != nil {
		return fail(exitError, "%s: %v", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fail(exitError, "%s: %v binary: offline listing reads x86-64 only", path, f.Machine)
	}
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		return fail(exitError, "%s: not a Go binary (no .text or .gopclntab)", path)
	}
	code, err := text.Data()
	if err != nil {
		return fail(exitError, "%s: %v", path, err)
	}
	pclnData, err := pcln.Data()
	if err != nil {
		return fail(exitError, "%s: %v", path, err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(pclnData, text.Addr))
	if err != nil {
		return fail(exitError, "%s: reading .gopclntab: %v", path, err)
	}
	var sp *spec.Spec
	if len(specs) == 1 {
		s, err := spec.Parse(specs[0])
		if err != nil {
			return fail(exitBadSpec, "%v", err)
		}
		s.Provider, s.Name = "", "" // unknown offline
		sp = &s
	}
	inData := func(a uint64) bool {
		for _, n := range []string{".data", ".bss"} {
			if s := f.Section(n); s != nil && a >= s.Addr && a < s.Addr+s.Size {
				return true
			}
		}
		return false
	}
	syms, _ := f.Symbols()
	sort.Slice(syms, func(i, j int) bool { return syms[i].Value < syms[j].Value })
	symAt := func(a uint64) string {
		i := sort.Search(len(syms), func(i int) bool { return syms[i].Value > a }) - 1
		if i >= 0 && a < syms[i].Value+max(syms[i].Size, 1) {
			return syms[i].Name
		}
		return fmt.Sprintf("%#x", a)
	}
	funcName := func(pc uint64) string {
		if fn := tab.PCToFunc(pc); fn != nil {
			return fn.Name
		}
		return ""
	}
	mem := amd64.Bytes{Base: text.Addr, Code: code}
	pass := func(t uint64) bool { return strings.HasPrefix(funcName(t), "runtime.race") }
	var sites []offlineSite
	flags := map[uint64]bool{}
	type guard struct{ addr, flag uint64 }
	var guards []guard
	for _, off := range amd64.Candidates(code) {
		addr := text.Addr + uint64(off)
		flag := uint64(int64(addr) + 7 + int64(int32(binary.LittleEndian.Uint32(code[off+2:]))))
		if !inData(flag) {
			continue
		}
		fire, ok := fireBlock(mem, addr)
		if !ok {
			guards = append(guards, guard{addr, flag})
			continue
		}
		g, err := amd64.GuardedCall(mem, fire, pass)
		if err != nil || !strings.HasPrefix(funcName(g.Call), firePrefix) || !strings.HasSuffix(funcName(g.Call), ").fire") {
			guards = append(guards, guard{addr, flag})
			continue
		}
		flags[flag] = true
		sites = append(sites, offlineSite{Addr: addr, Variable: symAt(flag), Kind: "fire"})
	}
	for _, g := range guards {
		if flags[g.flag] {
			sites = append(sites, offlineSite{Addr: g.addr, Variable: symAt(g.flag), Kind: "guard"})
		}
	}
	var out []offlineSite
	for _, s := range sites {
		s.File, s.Line, _ = tab.PCToLine(s.Addr)
		s.Function = funcName(s.Addr)
		module, fn := sled.SplitFunc(s.Function)
		if sp != nil && !sp.Match("", module, fn, "") {
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	if asJSON {
		for _, s := range out {
			printJSON(w, s)
		}
		return nil
	}
	fmt.Fprintf(w, "%s: %d probe sites (offline: probes are named by their definition variable;\n"+
		"provider and name are Define arguments, known only at run time; the function is the one\n"+
		"whose code holds the site, after inlining)\n", path, len(out))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ADDR\tVARIABLE\tFUNCTION\tFILE:LINE\tKIND")
	for _, s := range out {
		fmt.Fprintf(tw, "%#x\t%s\t%s\t%s:%d\t%s\n", s.Addr, s.Variable, s.Function, shortFile(s.File), s.Line, s.Kind)
	}
	return tw.Flush()
}

// fireBlock reads the check at addr as a site (CMPB, NOPs, JE or JNE) and returns
// where its guarded block starts.
func fireBlock(mem amd64.Bytes, addr uint64) (uint64, bool) {
	pc := addr + 7
	for range 8 {
		in, err := amd64.Decode(mem, pc)
		if err != nil {
			return 0, false
		}
		switch in.Op {
		case x86asm.NOP:
			pc += uint64(in.Len)
			continue
		case x86asm.JE:
			return in.End(), true
		case x86asm.JNE:
			return in.Target, true
		}
		return 0, false
	}
	return 0, false
}
