package sealfmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// SectionName is the section of a sealed binary that holds its site table.
const SectionName = ".gosdt.sites"

// SiteTable is what `sdtctl seal` records in a binary: every site discovery found in
// the file, with the bytes that verify it, and the probes that have a USDT semaphore.
// At start the runtime reads it instead of scanning the text (see sled.Discover).
type SiteTable struct {
	Arch   string // "amd64" or "arm64"
	Text   uint64 // link-time address of runtime.text: a PIE is shifted by where it runs
	Sites  []Site // link-time addresses
	Probes []Probe
}

// Site is the record of one site: a sled.Site as discovery proved it in the file,
// without what a process learns of it.
type Site struct {
	Addr     uint64
	Len      int
	Flag     uint64
	Kind     uint8 // a sled.Kind: below Kinds
	Return   uint64
	ToggleAt int
	Toggle   int

	Orig, Off, On []byte
	Also          []Rewrite
	Note          string

	Cause  uint8  // a sled.Cause: below Causes; 0, sled.Proven, for a site with a verified sled
	Detail string // the refusal in words
}

// Rewrite is one of a site's rewrites outside its own bytes (sled.Rewrite).
type Rewrite struct {
	Addr      uint64
	Orig, New []byte
}

// A table records sled's Kind and Cause by value: the format knows how many there are,
// and that a table of version 1 or 2, which recorded no cause, meant sled.Unproven.
const (
	Kinds         = 2 // sled.Fire, sled.Guard
	Causes        = 5 // sled.Proven to sled.NotInData
	CauseUnproven = 1 // sled.Unproven
)

// sealable reports whether the site has a verified sled (no refusal).
func (s Site) sealable() bool { return s.Cause == 0 }

// Probe is a probe name that has USDT notes, and the semaphore slot a tracer raises
// while it is attached (see Semaphore).
type Probe struct {
	Provider, Name string
	Slot           int
}

// tableMagic starts an encoded table; its last byte is the format version. Version 2
// added each site's toggle offset (amd64 sleds may start with a NOP that aligns the
// toggle), version 3 the cause of a refusal. Older tables, from an older sdtctl seal,
// are read too: version 1 with every toggle at offset 0, which is how that version laid
// its sleds out, and a refusal of version 1 or 2 as Unproven.
const (
	tableMagic   = "GOSDTST\x03"
	tableMagicV2 = "GOSDTST\x02"
	tableMagicV1 = "GOSDTST\x01"
)

// Encode returns the table in its section format: little-endian, length-prefixed
// byte strings, so that a reader can refuse anything malformed without guessing.
func (t *SiteTable) Encode() []byte { return t.encode(tableMagic) }

// encode writes the table in the format magic names; tests write version 1 with it.
func (t *SiteTable) encode(magic string) []byte {
	var e encoder
	e.b = append(e.b, magic...)
	e.str(t.Arch)
	e.u64(t.Text)
	e.u32(uint32(len(t.Sites)))
	for _, s := range t.Sites {
		e.u64(uint64(s.Addr))
		e.u32(uint32(s.Len))
		e.u64(uint64(s.Flag))
		e.u32(uint32(s.Kind))
		e.u64(uint64(s.Return))
		e.u32(uint32(s.Toggle))
		if magic != tableMagicV1 {
			e.u32(uint32(s.ToggleAt))
		}
		e.bytes(s.Orig)
		e.bytes(s.Off)
		e.bytes(s.On)
		if magic == tableMagic {
			e.u32(uint32(s.Cause))
		}
		e.str(s.Detail)
		e.str(s.Note)
		e.u32(uint32(len(s.Also)))
		for _, a := range s.Also {
			e.u64(uint64(a.Addr))
			e.bytes(a.Orig)
			e.bytes(a.New)
		}
	}
	e.u32(uint32(len(t.Probes)))
	for _, p := range t.Probes {
		e.str(p.Provider)
		e.str(p.Name)
		e.u32(uint32(p.Slot))
	}
	return e.b
}

// TableProblem says what is wrong with a sealed binary's site table.
type TableProblem uint8

const (
	TableMissing   TableProblem = iota + 1 // the binary is sealed, but the section is not in it
	TableTruncated                         // shorter than the seal mark says, or the file ends inside it
	TableBadMagic                          // it does not start with a site table's magic
	TableNewer                             // a format version this gosdt does not read
	TableMismatch                          // its length or CRC is not the seal mark's: damaged, or another binary's
	TableMalformed                         // it is the table the mark was written for, but its records do not decode
	TableForeign                           // it is for another architecture than the program's
)

// TableError says why a sealed binary's site table cannot be used.
type TableError struct {
	File    string // the binary
	Problem TableProblem
	Detail  string // the problem in words
}

func (e *TableError) Error() string {
	msg := fmt.Sprintf("site table (%s) unusable: %s", SectionName, e.Detail)
	if e.File != "" {
		msg = e.File + ": " + msg
	}
	return msg
}

// CheckTable decodes a sealed binary's site table, section, after checking that it is
// the table the binary's seal mark (MarkFor) was written for: its magic, its length
// and its CRC, in that order, so that the most telling problem is the one named. The
// error is a *TableError without its File.
func CheckTable(section []byte, mark [4]uint64) (*SiteTable, error) {
	bad := func(p TableProblem, format string, args ...any) error {
		return &TableError{Problem: p, Detail: fmt.Sprintf(format, args...)}
	}
	want := mark[1]
	switch magic := section[:min(len(section), len(tableMagic))]; {
	case len(magic) < len(tableMagic) && string(magic) == tableMagic[:len(magic)]:
		return nil, bad(TableTruncated, "truncated: %d bytes, the seal mark says %d", len(section), want)
	case string(magic[:len(magic)-1]) != tableMagic[:len(tableMagic)-1]:
		return nil, bad(TableBadMagic, "bad magic %q", magic)
	case magic[len(magic)-1] > tableMagic[len(tableMagic)-1]:
		return nil, bad(TableNewer, "format version %d, newer than this gosdt reads (1 to %d): a newer sdtctl sealed it", magic[len(magic)-1], tableMagic[len(tableMagic)-1])
	case uint64(len(section)) < want:
		return nil, bad(TableTruncated, "truncated: %d bytes, the seal mark says %d", len(section), want)
	case uint64(len(section)) > want:
		return nil, bad(TableMismatch, "%d bytes, the seal mark says %d: another binary's table, or rewritten after sealing", len(section), want)
	case MarkFor(section) != mark:
		return nil, bad(TableMismatch, "CRC mismatch (%#08x, the seal mark says %#08x): damaged, or another binary's table", MarkFor(section)[2], mark[2])
	}
	t, err := DecodeTable(section)
	if err != nil {
		return nil, bad(TableMalformed, "%v (yet its CRC is the seal mark's: written by another tool?)", err)
	}
	return t, nil
}

// DecodeTable parses a site table. It checks the structure (lengths, kinds, that a
// sled's forms have the site's length), not that the table belongs to the program:
// sled checks every site's bytes against the text before trusting it (sled.FromTable).
func DecodeTable(b []byte) (*SiteTable, error) {
	d := decoder{b: b}
	version := 0
	switch magic := string(d.take(len(tableMagic))); {
	case magic == tableMagic:
		version = 3
	case magic == tableMagicV2:
		version = 2
	case magic == tableMagicV1:
		version = 1
	case magic[:len(magic)-1] == tableMagic[:len(tableMagic)-1]:
		return nil, fmt.Errorf("site table: format version %d, this gosdt reads 1 to 3: seal the binary with this version's sdtctl", magic[len(magic)-1])
	default:
		return nil, errors.New("site table: bad magic")
	}
	t := &SiteTable{Arch: d.str(), Text: d.u64()}
	n := d.count(40)
	for range n {
		s := Site{Addr: d.u64(), Len: int(d.u32()), Flag: d.u64()}
		kind := d.u32()
		s.Kind = uint8(kind)
		s.Return = d.u64()
		s.Toggle = int(d.u32())
		if version >= 2 {
			s.ToggleAt = int(d.u32())
		}
		s.Orig, s.Off, s.On = d.bytes(), d.bytes(), d.bytes()
		cause := uint32(CauseUnproven)
		if version >= 3 {
			cause = d.u32()
		}
		if detail := d.str(); detail != "" || version >= 3 && cause != 0 {
			s.Cause, s.Detail = uint8(cause), detail
		}
		s.Note = d.str()
		for range d.count(12) {
			s.Also = append(s.Also, Rewrite{Addr: d.u64(), Orig: d.bytes(), New: d.bytes()})
		}
		if d.err != nil {
			break
		}
		if err := checkSite(s, kind, cause); err != nil {
			return nil, fmt.Errorf("site table: site %#x: %w", s.Addr, err)
		}
		t.Sites = append(t.Sites, s)
	}
	for range d.count(12) {
		p := Probe{Provider: d.str(), Name: d.str(), Slot: int(d.u32())}
		if d.err == nil && (p.Slot <= 0 || p.Slot >= SemaphoreSlots) {
			return nil, fmt.Errorf("site table: probe %s:%s: semaphore slot %d", p.Provider, p.Name, p.Slot)
		}
		t.Probes = append(t.Probes, p)
	}
	if d.err != nil {
		return nil, fmt.Errorf("site table: %w", d.err)
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("site table: %d bytes after the end", len(d.b))
	}
	return t, nil
}

// checkSite rejects a decoded site whose forms could not have come from discovery.
// kind and cause are the words as read: a value beyond a uint8 is not one Encode
// writes.
func checkSite(s Site, kind, cause uint32) error {
	switch {
	case kind >= Kinds:
		return fmt.Errorf("kind %d", kind)
	case cause >= Causes || s.Cause >= Causes:
		return fmt.Errorf("refusal cause %d", cause)
	case s.Cause != 0 && s.Detail == "":
		return errors.New("a refusal without its reason")
	case len(s.Orig) != s.Len || s.Len == 0 || s.Len > 64:
		return fmt.Errorf("%d original bytes for a %d-byte site", len(s.Orig), s.Len)
	case s.sealable() && (len(s.Off) != s.Len || len(s.On) != s.Len || s.Toggle <= 0 || s.ToggleAt < 0 || s.ToggleAt+s.Toggle > s.Len):
		return errors.New("sled forms do not fit the site")
	case s.sealable() && !onlyToggleDiffers(s):
		return errors.New("sled forms differ outside the toggle")
	}
	for _, a := range s.Also {
		if len(a.Orig) != len(a.New) || len(a.Orig) == 0 || len(a.Orig) > 16 {
			return errors.New("malformed extra rewrite")
		}
	}
	return nil
}

// onlyToggleDiffers reports whether Off and On are equal outside the toggle: a run-time
// switch writes only the toggle, so any other difference could not be switched.
func onlyToggleDiffers(s Site) bool {
	end := s.ToggleAt + s.Toggle
	return bytes.Equal(s.Off[:s.ToggleAt], s.On[:s.ToggleAt]) && bytes.Equal(s.Off[end:], s.On[end:])
}

type encoder struct{ b []byte }

func (e *encoder) u32(v uint32)   { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64)   { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) bytes(v []byte) { e.u32(uint32(len(v))); e.b = append(e.b, v...) }
func (e *encoder) str(v string)   { e.bytes([]byte(v)) }

// The decoder's readers are not inlined: DecodeTable calls them for every field, and
// inlined they made it, with its debug information, several kilobytes larger in every
// program that imports sdt; a table is decoded once, at start.
//
//go:noinline
func (d *decoder) str() string { return string(d.bytes()) }

//go:noinline
func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.take(4)) }

//go:noinline
func (d *decoder) u64() uint64      { return binary.LittleEndian.Uint64(d.take(8)) }
func (d *decoder) fail(what string) { d.err = errors.New(what); d.b = nil }

// decoder reads what encoder wrote. After the first error every read returns zeros,
// so that callers check d.err once, at the end of a record.
type decoder struct {
	b   []byte
	err error
}

var zeros [8]byte

func (d *decoder) take(n int) []byte {
	if d.err != nil || n > len(d.b) {
		if d.err == nil {
			d.fail("truncated")
		}
		return zeros[:min(n, len(zeros))]
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.u32()
	if n > math.MaxInt32 || int(n) > len(d.b) {
		d.fail("truncated")
		return nil
	}
	return append([]byte(nil), d.take(int(n))...)
}

// count reads a record count and refuses one that the remaining bytes could not hold
// (each record is at least minSize bytes), so that garbage cannot make us allocate.
func (d *decoder) count(minSize int) int {
	n := d.u32()
	if uint64(n)*uint64(minSize) > uint64(len(d.b)) {
		d.fail("record count larger than the table")
		return 0
	}
	return int(n)
}
