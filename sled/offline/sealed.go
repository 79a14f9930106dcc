package offline

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/gosdt/gosdt/internal/sealfmt"
)

// ErrNoGosdt is returned (wrapped) for a Go binary that does not use gosdt: it has no
// seal mark.
var ErrNoGosdt = errors.New("not a gosdt program")

// SealMark returns the address of the seal mark in a binary (sealfmt.Symbol, or
// sealfmt.OldSymbol in one linked with an older gosdt) and the mark's words in the
// file: {sealfmt.Magic, 0, 0, 0} as linked, the site table's length and CRC once
// sealed. It is found by its symbol or, in a binary without a symbol table, as the one
// sealfmt.Magic followed by a zero fourth word at an 8-byte boundary of its writable
// data.
func SealMark(f *elf.File) (addr uint64, mark [4]uint64, err error) {
	var symbol string
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == sealfmt.Symbol || s.Name == sealfmt.OldSymbol {
				addr, symbol = s.Value, s.Name
				break
			}
		}
		if symbol == "" {
			return 0, mark, fmt.Errorf("%w: no %s in its symbol table", ErrNoGosdt, sealfmt.Symbol)
		}
	}
	var found []uint64
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_WRITE == 0 || sec.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		if addr != 0 && (addr < sec.Addr || addr+32 > sec.Addr+sec.Size) {
			continue
		}
		b, err := sec.Data()
		if err != nil {
			return 0, mark, fmt.Errorf("%s: %w", sec.Name, err)
		}
		if addr != 0 {
			return addr, markAt(b[addr-sec.Addr:]), nil
		}
		for off := (8 - sec.Addr%8) % 8; off+sealfmt.Size <= uint64(len(b)); off += 8 {
			if m := markAt(b[off:]); m[0] == sealfmt.Magic && m[3] == 0 {
				found = append(found, sec.Addr+off)
				mark = m
			}
		}
	}
	switch {
	case addr != 0:
		return 0, mark, fmt.Errorf("%s at %#x is not in the file's data", symbol, addr)
	case len(found) == 0:
		return 0, mark, fmt.Errorf("%w: no gosdt seal mark in its data", ErrNoGosdt)
	case len(found) > 1:
		return 0, mark, fmt.Errorf("the gosdt seal mark is in its data %d times: cannot tell which is the program's (a binary without a symbol table)", len(found))
	}
	return found[0], mark, nil
}

func markAt(b []byte) (m [4]uint64) {
	for i := range m {
		m[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return m
}

// SealedTable returns the site table of a sealed binary, checked against its seal
// mark (sealfmt.CheckTable): sealed is false for a binary that was never sealed. A
// binary that was sealed but whose table cannot be used gets a *sealfmt.TableError
// (without its File) saying why.
func SealedTable(f *elf.File) (st *sealfmt.SiteTable, sealed bool, err error) {
	sec := f.Section(sealfmt.SectionName)
	_, mark, merr := SealMark(f)
	bad := func(p sealfmt.TableProblem, format string, args ...any) (*sealfmt.SiteTable, bool, error) {
		return nil, true, &sealfmt.TableError{Problem: p, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case sec == nil && (merr != nil || mark[1] == 0):
		return nil, false, nil
	case merr != nil:
		return bad(sealfmt.TableMismatch, "the file has a site table but no seal mark to check it with: %v", merr)
	case sec == nil:
		return bad(sealfmt.TableMissing, "its seal mark says it is sealed, but it has no %s section: stripped or rewritten after sealing", sealfmt.SectionName)
	}
	data, err := sec.Data()
	if err != nil {
		return bad(sealfmt.TableTruncated, "the file ends inside it (%v)", err)
	}
	if st, err = sealfmt.CheckTable(data, mark); err != nil {
		return nil, true, err
	}
	if a := Arch(f.Machine); a != nil && st.Arch != a.Name {
		return bad(sealfmt.TableForeign, "the table is for %s, the binary is %s", st.Arch, a.Name)
	}
	return st, true, nil
}

// openELF opens path as an ELF file and says what is wrong with one that cannot be
// read, naming it.
func openELF(path string) (*elf.File, error) {
	f, err := elf.Open(path)
	var pe *fs.PathError
	if err != nil && !errors.As(err, &pe) { // os errors name the file already
		err = fmt.Errorf("%s: %w", path, describeELF(err))
	}
	return f, err
}

// NewELF reads image as an ELF file, with the errors openELF gives (without a name).
func NewELF(image []byte) (*elf.File, error) {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return nil, describeELF(err)
	}
	return f, nil
}

// describeELF says what debug/elf's error means: a file cut short ends before what its
// headers describe, and debug/elf says only EOF.
func describeELF(err error) error {
	var fe *elf.FormatError
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("truncated: the file ends before what its ELF headers describe (%w)", err)
	case errors.As(err, &fe):
		return fmt.Errorf("not an ELF file: %w", err)
	}
	return err
}
