package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// Section is a section to add to an ELF file.
type Section struct {
	Name  string
	Type  elf.SectionType
	Flags elf.SectionFlag
	Addr  uint64 // for SHF_ALLOC sections: the address of bytes already in a loaded segment
	Data  []byte // appended to the file; for Alloc sections, nil: the section then
	// describes Size bytes already in the file at the offset that maps Addr
	Size  uint64
	Align uint64
}

// AddSections returns a copy of the 64-bit little-endian ELF image with secs appended:
// their data and a new section header table go to the end of the file, and the
// section-name string table is rewritten there with the new names. Program headers and
// every loaded byte stay as they were, so the program runs exactly as before.
func AddSections(image []byte, secs []Section) ([]byte, error) {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return nil, fmt.Errorf("usdt: not an ELF file: %w", err)
	}
	if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB {
		return nil, fmt.Errorf("usdt: %v %v ELF: only 64-bit little-endian files are supported", f.Class, f.Data)
	}
	var eh elf.Header64
	if _, err := binary.Decode(image, binary.LittleEndian, &eh); err != nil {
		return nil, fmt.Errorf("usdt: ELF header: %w", err)
	}
	shnum := int(eh.Shnum)
	if eh.Shentsize != sectionHeaderSize || shnum == 0 || int(eh.Shstrndx) >= shnum || eh.Shoff+uint64(shnum*sectionHeaderSize) > uint64(len(image)) {
		return nil, fmt.Errorf("usdt: no usable section header table")
	}
	for _, s := range secs {
		if f.Section(s.Name) != nil {
			return nil, fmt.Errorf("usdt: the file already has a %s section", s.Name)
		}
	}
	headers := make([]elf.Section64, shnum, shnum+len(secs))
	if _, err := binary.Decode(image[eh.Shoff:], binary.LittleEndian, headers); err != nil {
		return nil, fmt.Errorf("usdt: section headers: %w", err)
	}
	names, err := f.Sections[eh.Shstrndx].Data()
	if err != nil {
		return nil, fmt.Errorf("usdt: section names: %w", err)
	}

	out := append([]byte(nil), image...)
	appendAligned := func(data []byte, align uint64) uint64 {
		for align > 1 && uint64(len(out))%align != 0 {
			out = append(out, 0)
		}
		off := uint64(len(out))
		out = append(out, data...)
		return off
	}
	for _, s := range secs {
		h := elf.Section64{Name: uint32(len(names)), Type: uint32(s.Type), Flags: uint64(s.Flags), Addr: s.Addr, Size: s.Size, Addralign: max(s.Align, 1)}
		names = append(append(names, s.Name...), 0)
		if s.Flags&elf.SHF_ALLOC != 0 && s.Data == nil {
			if h.Off, err = FileOffset(f, s.Addr, s.Size); err != nil {
				return nil, fmt.Errorf("usdt: %s: %w", s.Name, err)
			}
		} else {
			h.Size, h.Off = uint64(len(s.Data)), appendAligned(s.Data, s.Align)
		}
		headers = append(headers, h)
	}
	headers[eh.Shstrndx].Off = appendAligned(names, 1)
	headers[eh.Shstrndx].Size = uint64(len(names))
	table, err := binary.Append(nil, binary.LittleEndian, headers)
	if err != nil {
		return nil, err
	}
	eh.Shoff = appendAligned(table, 8)
	eh.Shnum = uint16(len(headers))
	if _, err := binary.Encode(out, binary.LittleEndian, &eh); err != nil {
		return nil, err
	}
	return out, nil
}

// sectionHeaderSize is the size of an elf.Section64 in the file.
const sectionHeaderSize = 64

// FileOffset is where the size bytes at addr are in the file, from the loaded segments.
func FileOffset(f *elf.File, addr, size uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr+size <= p.Vaddr+p.Filesz {
			return p.Off + (addr - p.Vaddr), nil
		}
	}
	return 0, fmt.Errorf("address %#x is not in a loaded segment's file bytes", addr)
}
