// Package offline reads the probe sites and definitions of a Go ELF binary without
// running it, for amd64 and arm64 on any host: what sdtctl list and sdtctl seal need.
package offline

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"time"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/arch/amd64"
	"github.com/gosdt/gosdt/arch/arm64"
	"github.com/gosdt/gosdt/internal/functab/elffile"
	"github.com/gosdt/gosdt/internal/goversion"
	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sled"
)

// Arch returns the description of the architecture of ELF machine m, nil for one that
// gosdt does not read.
func Arch(m elf.Machine) *arch.Offline {
	for _, a := range []*arch.Offline{&amd64.Offline, &arm64.Offline} {
		if elf.Machine(a.Machine) == m {
			return a
		}
	}
	return nil
}

// Discover finds and proves the probe sites of a linked Go binary without running it,
// as the runtime does (sled.Scan, with the architecture of the file). Addresses are
// the file's link-time ones. A site's holder is named from the inline tree in the
// file's function table, as the live path names it from the runtime's (DWARF is not
// needed). What it cannot know offline: the probes' names, which are Define's arguments
// at run time (Definitions reads them from the code that makes them). A sealed binary's
// sites come from its site table (Table.Sealed; Site.Presealed where the file holds
// the sled); when that table cannot be used, they are found as the runtime would find
// them then (sled.Rescan), and Table.Warning says why, naming the file.
func Discover(path string) (*sled.Table, error) {
	begin := time.Now()
	b, err := open(path, "sites")
	if err != nil {
		return nil, err
	}
	defer b.f.Close()
	f, code := b.f, b.code
	src, err := b.source()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var t *sled.Table
	switch st, sealed, err := SealedTable(f); {
	case err != nil:
		// The sites are in the text as sleds a scan would not recognise.
		t = sled.Rescan(b.arch.Arch, src)
		t.Warning = sled.RescanWarning(fmt.Errorf("%s: %w", path, err), t)
	case sealed:
		t = sled.FromTable(st, b.arch.Name, src, 0) // link-time addresses, as the table's
	default:
		t = sled.Scan(b.arch.Arch, src)
	}
	t.TextBytes = len(code)
	t.Elapsed = time.Since(begin)
	return t, nil
}

// goBinary is a Go ELF binary opened for reading: its architecture, its text and its
// function table.
type goBinary struct {
	f     *elf.File
	arch  *arch.Offline
	text  *elf.Section
	code  []byte // text's
	start uint64 // runtime.text
	tab   *gosym.Table
}

// open opens the Go binary at path to read what of it (sites, definitions).
func open(path, what string) (*goBinary, error) {
	f, err := openELF(path)
	if err != nil {
		return nil, err
	}
	b := &goBinary{f: f, arch: Arch(f.Machine)}
	if b.arch == nil {
		err = fmt.Errorf("%s: %v binary: %s are read from x86-64 and AArch64 files only", path, f.Machine, what)
	} else if b.text, b.start, b.tab, err = GoText(path, f); err == nil {
		if v := elffile.GoVersion(f); goversion.Check(v, goversion.FuncTab) != nil {
			// Its function table, and the shapes its compiler emits, may not be the
			// ones read here: built with a Go whose layouts gosdt has not read.
			err = fmt.Errorf("%s: %w", path, goversion.Check(v, goversion.FuncTab))
		} else if b.code, err = b.text.Data(); err != nil {
			err = fmt.Errorf("%s: .text: %w", path, err)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

// source is the binary as discovery reads it: its text, data and bss, and its names.
func (b *goBinary) source() (sled.Source, error) {
	pcln, err := b.f.Section(".gopclntab").Data()
	if err != nil {
		return sled.Source{}, fmt.Errorf(".gopclntab: %w", err)
	}
	var data [][2]uint64
	for _, name := range []string{".data", ".bss"} {
		if s := b.f.Section(name); s != nil {
			data = append(data, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	return sled.Source{
		Text: b.code,
		Base: b.text.Addr,
		Mem:  b.mem(),
		InData: func(addr uint64) bool {
			for _, r := range data {
				if addr >= r[0] && addr < r[1] {
					return true
				}
			}
			return false
		},
		Syms: fileSyms{tab: b.tab, inl: newInlineTree(b.f, pcln, b.start, b.tab)},
	}, nil
}

// mem is the binary's text by address.
func (b *goBinary) mem() arch.Bytes { return arch.Bytes{Base: b.text.Addr, Code: b.code} }

// fileSyms names functions, and the holder of a site, from a binary's .gopclntab.
type fileSyms struct {
	tab *gosym.Table
	inl *inlineTree // nil if its layout is not known: then a holder is the function whose code holds the site
}

func (s fileSyms) Func(pc uint64) (entry, end uint64) {
	if fn := s.tab.PCToFunc(pc); fn != nil {
		return fn.Entry, fn.End
	}
	return 0, 0
}

func (s fileSyms) Name(pc uint64) string {
	if fn := s.tab.PCToFunc(pc); fn != nil {
		return fn.Name
	}
	return ""
}

func (s fileSyms) Position(pc uint64) (file string, line int) {
	file, line, _ = s.tab.PCToLine(pc)
	return file, line
}

// Holder follows the live path's rule (runtime.CallersFrames on the site's pc): the
// innermost frame outside the probe package, or the outermost if all are in it.
func (s fileSyms) Holder(pc uint64) sled.Holder {
	var h sled.Holder
	if s.inl != nil {
		for _, f := range s.inl.frames(pc) {
			mod, name := spec.SplitFunc(f.fn)
			h = sled.Holder{Module: mod, Func: name, File: f.file, Line: f.line}
			if !sled.IsProbePackage(mod) {
				return h
			}
		}
		if h.Func != "" {
			return h
		}
	}
	file, line, f := s.tab.PCToLine(pc)
	if f != nil {
		h.Module, h.Func = spec.SplitFunc(f.Name)
	}
	h.File, h.Line = file, line
	return h
}

// GoText returns a Go binary's text section, the address of Go's first function in it
// (runtime.text, which C code precedes in a binary linked externally), and its
// function table (.gopclntab, which stripping leaves: the runtime needs it).
func GoText(path string, f *elf.File) (text *elf.Section, start uint64, tab *gosym.Table, err error) {
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		return nil, 0, nil, fmt.Errorf("%s: not a Go binary (no .text or .gopclntab)", path)
	}
	pclnData, err := pcln.Data()
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%s: .gopclntab: %w", path, err)
	}
	start = goTextStart(f, text, pclnData)
	tab, err = gosym.NewTable(nil, gosym.NewLineTable(pclnData, start))
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%s: reading .gopclntab: %w", path, err)
	}
	return text, start, tab, nil
}

// goTextStart finds runtime.text: in the symbol table, else in the function table's
// header (its textStart, relocated in the file unless the binary is a PIE), else the
// text section's start, which it is when Go linked the binary itself.
func goTextStart(f *elf.File, text *elf.Section, pcln []byte) uint64 {
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" {
				return s.Value
			}
		}
	}
	// pcHeader: magic uint32, two pad bytes, minLC, ptrSize, nfunc, nfiles, textStart.
	if len(pcln) >= 8+3*8 && pcln[7] == 8 {
		if v := f.ByteOrder.Uint64(pcln[8+2*8:]); v >= text.Addr && v < text.Addr+text.Size {
			return v
		}
	}
	return text.Addr
}
