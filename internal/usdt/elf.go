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
	bo := binary.LittleEndian
	shoff := bo.Uint64(image[0x28:])
	shentsize := int(bo.Uint16(image[0x3a:]))
	shnum := int(bo.Uint16(image[0x3c:]))
	shstrndx := int(bo.Uint16(image[0x3e:]))
	if shentsize != 64 || shnum == 0 || shstrndx >= shnum || shoff+uint64(shnum*64) > uint64(len(image)) {
		return nil, fmt.Errorf("usdt: no usable section header table")
	}
	for _, s := range secs {
		if f.Section(s.Name) != nil {
			return nil, fmt.Errorf("usdt: the file already has a %s section", s.Name)
		}
	}
	headers := append([]byte(nil), image[shoff:shoff+uint64(shnum*64)]...)
	strtab := f.Sections[shstrndx]
	names, err := strtab.Data()
	if err != nil {
		return nil, fmt.Errorf("usdt: section names: %w", err)
	}

	out := append([]byte(nil), image...)
	appendAligned := func(data []byte, align uint64) uint64 {
		if align == 0 {
			align = 1
		}
		for uint64(len(out))%align != 0 {
			out = append(out, 0)
		}
		off := uint64(len(out))
		out = append(out, data...)
		return off
	}
	for _, s := range secs {
		nameOff := uint32(len(names))
		names = append(append(names, s.Name...), 0)
		var h [64]byte
		bo.PutUint32(h[0:], nameOff)
		bo.PutUint32(h[4:], uint32(s.Type))
		bo.PutUint64(h[8:], uint64(s.Flags))
		bo.PutUint64(h[16:], s.Addr)
		size, off := s.Size, uint64(0)
		if s.Flags&elf.SHF_ALLOC != 0 && s.Data == nil {
			if off, err = FileOffset(f, s.Addr, size); err != nil {
				return nil, fmt.Errorf("usdt: %s: %w", s.Name, err)
			}
		} else {
			size, off = uint64(len(s.Data)), appendAligned(s.Data, s.Align)
		}
		bo.PutUint64(h[24:], off)
		bo.PutUint64(h[32:], size)
		bo.PutUint64(h[48:], max(s.Align, 1))
		headers = append(headers, h[:]...)
	}
	namesOff := appendAligned(names, 1)
	sh := headers[shstrndx*64:]
	bo.PutUint64(sh[24:], namesOff)
	bo.PutUint64(sh[32:], uint64(len(names)))
	newShoff := appendAligned(headers, 8)
	bo.PutUint64(out[0x28:], newShoff)
	bo.PutUint16(out[0x3c:], uint16(shnum+len(secs)))
	return out, nil
}

// FileOffset is where the size bytes at addr are in the file, from the loaded segments.
func FileOffset(f *elf.File, addr, size uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr+size <= p.Vaddr+p.Filesz {
			return p.Off + (addr - p.Vaddr), nil
		}
	}
	return 0, fmt.Errorf("address %#x is not in a loaded segment's file bytes", addr)
}
