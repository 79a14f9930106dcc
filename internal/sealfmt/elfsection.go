package sealfmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// readSection returns the contents of the section called name in a 64-bit
// little-endian ELF file, reading only the headers and that section: the runtime reads
// its site table from its own file at start, and needs none of debug/elf for that (nor
// the DWARF and compression readers it brings). Sizes are checked against the file
// before anything is allocated; a section that is not there is (nil, nil).
func readSection(r io.ReaderAt, size int64, name string) ([]byte, error) {
	var eh [64]byte
	if _, err := r.ReadAt(eh[:], 0); err != nil {
		return nil, fmt.Errorf("ELF header: %w", err)
	}
	if !bytes.Equal(eh[:4], []byte("\x7fELF")) || eh[4] != 2 || eh[5] != 1 {
		return nil, errors.New("not a 64-bit little-endian ELF file")
	}
	le := binary.LittleEndian
	shoff, shentsize, shnum, shstrndx := le.Uint64(eh[40:]), int64(le.Uint16(eh[58:])), int64(le.Uint16(eh[60:])), int64(le.Uint16(eh[62:]))
	if shentsize < 64 || shnum == 0 || shstrndx >= shnum || shoff > uint64(size) || shnum*shentsize > size-int64(shoff) {
		return nil, errors.New("ELF section headers out of the file")
	}
	headers := make([]byte, shnum*shentsize)
	if _, err := r.ReadAt(headers, int64(shoff)); err != nil {
		return nil, fmt.Errorf("ELF section headers: %w", err)
	}
	// contents reads section i (its offset and size at 24 and 32 of its header); a
	// section without file bytes (SHT_NOBITS, type 8) has none.
	contents := func(i int64) ([]byte, error) {
		h := headers[i*shentsize:]
		off, n := le.Uint64(h[24:]), le.Uint64(h[32:])
		if le.Uint32(h[4:]) == 8 {
			return nil, nil
		}
		if off > uint64(size) || n > uint64(size)-off {
			return nil, fmt.Errorf("ELF section %d out of the file", i)
		}
		b := make([]byte, n)
		_, err := r.ReadAt(b, int64(off))
		return b, err
	}
	names, err := contents(shstrndx)
	if err != nil {
		return nil, err
	}
	for i := range shnum {
		at := uint64(le.Uint32(headers[i*shentsize:]))
		if at < uint64(len(names)) && bytes.HasPrefix(names[at:], append([]byte(name), 0)) {
			return contents(i)
		}
	}
	return nil, nil
}
