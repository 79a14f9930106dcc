package sled

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"sync"
	"time"

	"github.com/gosdt/gosdt/arch"
)

// DiscoverFile finds and verifies the probe sites of a linked Go binary without running
// it, with the same matchers as Discover (for amd64 and arm64 ELF files, on any host).
// Addresses are the file's link-time ones. Describe names the function and line of the
// probe statement from the inlined calls in the file's DWARF, as the live path does
// from the runtime's inline tree; a binary without DWARF (-ldflags=-w) gives the
// function whose code holds the site. What it cannot know offline: the probes' names,
// which are Define's arguments at run time. A sealed binary's
// sites come from its site table (Table.Sealed; Site.Presealed where the file holds
// the sled).
func DiscoverFile(path string, cfg Config) (*Table, error) {
	start := time.Now()
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	goarch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	if goarch == "" {
		return nil, fmt.Errorf("%s: %v binary: sites are read from x86-64 and AArch64 files only", path, f.Machine)
	}
	text, _, tab, err := GoText(path, f)
	if err != nil {
		return nil, err
	}
	code, err := text.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: .text: %w", path, err)
	}
	var data [][2]uint64
	for _, name := range []string{".data", ".bss"} {
		if s := f.Section(name); s != nil {
			data = append(data, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	src := source{
		text: code,
		base: uintptr(text.Addr),
		mem:  arch.Bytes{Base: text.Addr, Code: code},
		inData: func(addr uintptr) bool {
			for _, r := range data {
				if uint64(addr) >= r[0] && uint64(addr) < r[1] {
					return true
				}
			}
			return false
		},
		syms: fileSyms{tab: tab, inl: &lazyInline{path: path}},
	}
	var t *Table
	if sec := f.Section(SectionName); sec != nil {
		// Sealed: the sites are in the table, and in the text as sleds a scan would
		// not recognise.
		b, err := sec.Data()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, SectionName, err)
		}
		st, err := DecodeTable(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		t = fromTable(st, goarch, src, cfg, 0) // link-time addresses, as the table's
	} else {
		t = discoverArch(goarch, src, cfg)
	}
	t.TextBytes = len(code)
	t.Elapsed = time.Since(start)
	return t, nil
}

// fileSyms names functions from a binary's .gopclntab, and the holder of a site from
// the inlined calls in its DWARF (when it has any; else the function whose code holds
// the site, as the function table has no inline tree).
type fileSyms struct {
	tab *gosym.Table
	inl *lazyInline
}

// lazyInline reads a binary's inlined calls when a site is first described.
type lazyInline struct {
	path string
	once sync.Once
	c    *inlineCalls
}

func (l *lazyInline) calls(probePkg string) *inlineCalls {
	if l == nil {
		return nil
	}
	l.once.Do(func() { l.c = readInlineCalls(l.path, probePkg) })
	return l.c
}

func (s fileSyms) entry(pc uintptr) uintptr {
	if fn := s.tab.PCToFunc(uint64(pc)); fn != nil {
		return uintptr(fn.Entry)
	}
	return 0
}

func (s fileSyms) name(pc uintptr) string {
	if fn := s.tab.PCToFunc(uint64(pc)); fn != nil {
		return fn.Name
	}
	return ""
}

func (s fileSyms) holder(pc uintptr, probePkg string) (fn, module, file string, line int) {
	// The live path's rule (live.holder): the innermost frame outside probePkg.
	if sp, ok := s.inl.calls(probePkg).at(uint64(pc)); ok {
		module, fn = SplitFunc(sp.fn)
		return fn, module, sp.file, sp.line
	}
	file, line, f := s.tab.PCToLine(uint64(pc))
	if f != nil {
		module, fn = SplitFunc(f.Name)
	}
	return fn, module, file, line
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
