// Package elffile reads the Go function table of an ELF binary (package functab's
// Table) from its sections: kept apart so that a traced process does not link debug/elf.
package elffile

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/goversion"
)

// ErrNotGo is what Read's error matches when the file has no Go function table.
var ErrNotGo = errors.New("not a Go binary")

// Read reads the function table of a 64-bit little-endian Go ELF binary (linux/amd64,
// linux/arm64): its .gopclntab, which stripping keeps (the runtime needs it), with
// runtime.text and go:func.* found as the runtime finds them when the symbol table is
// gone. Its pcs are the file's link-time addresses.
func Read(f *elf.File) (*functab.Table, error) {
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		return nil, fmt.Errorf("%w (no .text or .gopclntab section)", ErrNotGo)
	}
	if f.Class != elf.ELFCLASS64 || f.ByteOrder != binary.LittleEndian {
		return nil, fmt.Errorf("%w: %v %v binary", functab.ErrLayout, f.Class, f.ByteOrder)
	}
	version := GoVersion(f)
	if err := goversion.Check(version, goversion.FuncTab); err != nil {
		return nil, err
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, fmt.Errorf(".gopclntab: %w", err)
	}
	start := textStart(f, text, data)
	t, err := functab.New(data, start, nil)
	if err != nil {
		return nil, err
	}
	if at := goFunc(f, pcln.Addr, start, version); at != 0 {
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_ALLOC != 0 && s.Type == elf.SHT_PROGBITS && at >= s.Addr && at < s.Addr+s.Size {
				if b, err := s.Data(); err == nil {
					t.SetGofunc(b[at-s.Addr:])
				}
			}
		}
	}
	return t, nil
}

// textStart finds runtime.text: in the symbol table, else in the pcHeader's textStart
// (written before go1.26, relocated in the file unless the binary is a PIE), else the
// text section's start, which it is when Go linked the binary itself.
func textStart(f *elf.File, text *elf.Section, pcln []byte) uint64 {
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" {
				return s.Value
			}
		}
	}
	if v := functab.HeaderTextStart(pcln); v >= text.Addr && v < text.Addr+text.Size {
		return v
	}
	return text.Addr
}

// goFunc finds go:func.*, which funcdata offsets are relative to: in the symbol table,
// else in runtime.firstmoduledata (functab.FindGofunc). 0 if neither has it.
func goFunc(f *elf.File, pclnAddr, text uint64, version string) uint64 {
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "go:func.*" {
				return s.Value
			}
		}
	}
	for _, name := range []string{".go.module", ".noptrdata"} {
		if data := f.Section(name); data != nil {
			if b, err := data.Data(); err == nil {
				if at := functab.FindGofunc(b, data.Addr, pclnAddr, text, version); at != 0 {
					return at
				}
			}
		}
	}
	return 0
}

// GoVersion is the Go version that built f ("go1.27.3"), from its build information
// (.go.buildinfo, which stripping keeps), "" where that cannot be read. Go 1.18 and
// later write it inline: a 32-byte header ("\xff Go buildinf:", pointer size, flags
// with bit 2 set), then the version as a length-prefixed string.
func GoVersion(f *elf.File) string {
	s := f.Section(".go.buildinfo")
	if s == nil {
		return ""
	}
	b, err := s.Data()
	if err != nil || len(b) < 33 || string(b[:14]) != "\xff Go buildinf:" || b[15]&2 == 0 {
		return ""
	}
	n, k := binary.Uvarint(b[32:])
	if k <= 0 || n > 64 || uint64(len(b)-32-k) < n {
		return ""
	}
	return string(b[32+k : 32+k+int(n)])
}
