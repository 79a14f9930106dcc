package testbin

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"testing"
)

// Damages of a sealed binary's site table (.gosdt.sites) that DamageTable makes.
const (
	FlipByte        = "one byte flipped"          // a byte in the middle of the table
	BadMagic        = "bad magic"                 // its first byte
	TruncateSection = "section truncated"         // the section header says half its size
	TruncateFile    = "file truncated"            // the file ends in the middle of the table
	ForeignTable    = "another binary's table"    // the table of the sealed binary other
	NoTable         = "section removed by rename" // the section renamed, as if stripped
)

// DamageTable writes a copy of the sealed binary at path with its site table damaged
// as damage says (other is ForeignTable's donor), into a temporary directory of t, and
// returns the copy's path. The program's loaded bytes are untouched: it still runs.
func DamageTable(t testing.TB, path, damage, other string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off, size, hdr, nameOff := sectionAt(t, path, ".gosdt.sites")
	le := binary.LittleEndian
	switch damage {
	case FlipByte:
		b[off+size/2] ^= 0x40
	case BadMagic:
		b[off] ^= 0x01
	case TruncateSection:
		le.PutUint64(b[hdr+32:], size/2)
	case TruncateFile:
		b = b[:off+size/2]
	case ForeignTable:
		o, n, _, _ := sectionAt(t, other, ".gosdt.sites")
		ob, err := os.ReadFile(other)
		if err != nil {
			t.Fatal(err)
		}
		le.PutUint64(b[hdr+24:], uint64(len(b)))
		le.PutUint64(b[hdr+32:], n)
		b = append(b, ob[o:o+n]...)
	case NoTable:
		b[nameOff+1] = 'x' // .xosdt.sites
	default:
		t.Fatalf("no damage %q", damage)
	}
	out := t.TempDir() + "/damaged"
	if err := os.WriteFile(out, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// sectionAt returns where the section called name is in the ELF file at path: its
// bytes, its header, and its name in the section names.
func sectionAt(t testing.TB, path, name string) (off, size, header, nameOff uint64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shoff := binary.LittleEndian.Uint64(b[0x28:])
	names := f.Sections[binary.LittleEndian.Uint16(b[0x3e:])]
	for i, s := range f.Sections {
		if s.Name == name {
			h := shoff + uint64(i)*64
			return s.Offset, s.Size, h, names.Offset + uint64(binary.LittleEndian.Uint32(b[h:]))
		}
	}
	t.Fatalf("%s has no %s section", path, name)
	return
}
