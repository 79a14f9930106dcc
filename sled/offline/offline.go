// Package offline reads the probe sites and definitions of a Go ELF binary without
// running it, for amd64 and arm64 on any host: what sdtctl list and sdtctl seal need.
package offline

import (
	"debug/elf"
	"fmt"
	"time"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/arch/amd64"
	"github.com/gosdt/gosdt/arch/arm64"
	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/functab/elffile"
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
	f    *elf.File
	arch *arch.Offline
	text *elf.Section
	code []byte // text's
	tab  *functab.Table
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
	} else if b.text, b.tab, err = GoText(path, f); err == nil {
		if b.code, err = b.text.Data(); err != nil {
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
		Syms: fileSyms{b.tab},
	}, nil
}

// mem is the binary's text by address.
func (b *goBinary) mem() arch.Bytes { return arch.Bytes{Base: b.text.Addr, Code: b.code} }

// fileSyms names functions, and the holder of a site, from a binary's function table:
// with its inline trees where go:func.* was found, else a holder is the function whose
// code holds the site.
type fileSyms struct{ tab *functab.Table }

func (s fileSyms) Func(pc uint64) (entry, end uint64) {
	if i := s.tab.Find(pc); i >= 0 {
		return s.tab.Entry(i), s.tab.End(i)
	}
	return 0, 0
}

func (s fileSyms) Name(pc uint64) string {
	if i := s.tab.Find(pc); i >= 0 {
		return string(s.tab.Name(i))
	}
	return ""
}

func (s fileSyms) Position(pc uint64) (file string, line int) {
	if i := s.tab.Find(pc); i >= 0 {
		return s.tab.FileLine(i, pc)
	}
	return "", 0
}

// Holder follows the live path's rule (runtime.CallersFrames on the site's pc): the
// innermost frame outside the probe package, or the outermost if all are in it.
func (s fileSyms) Holder(pc uint64) sled.Holder {
	var h sled.Holder
	for _, f := range s.tab.Frames(pc) {
		mod, name := spec.SplitFunc(f.Func)
		h = sled.Holder{Module: mod, Func: name, File: f.File, Line: f.Line}
		if !sled.IsProbePackage(mod) {
			break
		}
	}
	return h
}

// GoText returns a Go binary's text section and its function table (elffile.Read:
// .gopclntab, which stripping leaves, the runtime needs it), whose Text is
// runtime.text (C code precedes it in a binary linked externally). A binary built
// with a Go whose layouts gosdt has not read is refused: its function table, and the
// shapes its compiler emits, may not be the ones read here.
func GoText(path string, f *elf.File) (text *elf.Section, tab *functab.Table, err error) {
	if tab, err = elffile.Read(f); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Section(".text"), tab, nil
}
