package sealfmt

import (
	"bytes"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"
)

func sampleTable() *SiteTable {
	return &SiteTable{
		Arch: "arm64",
		Text: 0x401000,
		Sites: []Site{
			{Addr: 0x401234, Len: 4, Flag: 0x5a0010, Return: 0x401244, Toggle: 4,
				Orig: []byte{1, 2, 3, 4}, Off: []byte{5, 6, 7, 8}, On: []byte{0x1f, 0x20, 0x03, 0xd5},
				Note: "flag load kept",
				Also: []Rewrite{{Addr: 0x401220, Orig: []byte{9, 9, 9, 9, 9, 9, 9, 9}, New: []byte{0x1f, 0x20, 0x03, 0xd5, 0x1f, 0x20, 0x03, 0xd5}}}},
			{Addr: 0x401300, Len: 2, Flag: 0x5a0020, Kind: 1 /* guard */, Orig: []byte{0x74, 0x10},
				Cause: CauseUnproven, Detail: "flags live at the target"},
			{Addr: 0x401407, Len: 9, Flag: 0x5a0030, Return: 0x401420, ToggleAt: 1, Toggle: 2,
				Orig: []byte{0x80, 0x3d, 1, 2, 3, 4, 0, 0x74, 0x10},
				Off:  []byte{0x90, 0xeb, 0x0f, 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
				On:   []byte{0x90, 0x66, 0x90, 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}},
		},
		Probes: []Probe{{Provider: "proc", Name: "exit", Slot: 1}, {Provider: "p", Name: "q", Slot: 1023}},
	}
}

func TestTableRoundTrip(t *testing.T) {
	in := sampleTable()
	b := in.Encode()
	out, err := DecodeTable(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
	for i := range len(b) {
		if _, err := DecodeTable(b[:i]); err == nil {
			t.Errorf("a table cut to %d of %d bytes decoded without error", i, len(b))
		}
	}
	if _, err := DecodeTable(append(b, 0)); err == nil {
		t.Error("a table with a trailing byte decoded without error")
	}
}

func TestTableRefusesImpossibleSites(t *testing.T) {
	for name, spoil := range map[string]func(*SiteTable){
		"kind":         func(t *SiteTable) { t.Sites[0].Kind = 7 },
		"orig length":  func(t *SiteTable) { t.Sites[0].Orig = t.Sites[0].Orig[:3] },
		"sled length":  func(t *SiteTable) { t.Sites[0].Off = append(t.Sites[0].Off, 0x90) },
		"toggle":       func(t *SiteTable) { t.Sites[0].Toggle = 5 },
		"toggle at":    func(t *SiteTable) { t.Sites[2].ToggleAt = 8 },
		"lead differs": func(t *SiteTable) { t.Sites[2].ToggleAt = 2; t.Sites[2].Toggle = 1 },
		"tail differs": func(t *SiteTable) { t.Sites[2].On[8] = 0x90 },
		"also":         func(t *SiteTable) { t.Sites[0].Also[0].New = nil },
		"cause":        func(t *SiteTable) { t.Sites[1].Cause = 9 },
		"no reason":    func(t *SiteTable) { t.Sites[1].Detail = "" },
		"slot 0":       func(t *SiteTable) { t.Probes[0].Slot = 0 },
		"slot range":   func(t *SiteTable) { t.Probes[0].Slot = SemaphoreSlots },
	} {
		st := sampleTable()
		spoil(st)
		if _, err := DecodeTable(st.Encode()); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// TestTableOlderVersions reads tables written by older sdtctl seals: version 1 placed
// every toggle at the site's first byte, version 2 recorded a refusal without its
// cause (read as Unproven). It refuses one from a newer format by its version.
func TestTableOlderVersions(t *testing.T) {
	for _, magic := range []string{tableMagicV1, tableMagicV2} {
		in := sampleTable()
		if magic == tableMagicV1 {
			in.Sites = in.Sites[:2] // version 1 had no lead: its sleds toggle at offset 0
		}
		out, err := DecodeTable(in.encode(magic))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Errorf("version %d:\n got %+v\nwant %+v", magic[len(magic)-1], out, in)
		}
	}
	b := sampleTable().Encode()
	b[len(tableMagic)-1] = 4
	if _, err := DecodeTable(b); err == nil || !strings.Contains(err.Error(), "version 4") {
		t.Errorf("a version 4 table: %v, want an error naming the version", err)
	}
}

// FuzzDecodeTable: a table read from a file may be anything; decoding must never
// panic or allocate without bound, and what it accepts must be what it would write.
func FuzzDecodeTable(f *testing.F) {
	f.Add(sampleTable().Encode())
	f.Add([]byte(tableMagic))
	f.Add(sampleTable().encode(tableMagicV1))
	f.Add(sampleTable().encode(tableMagicV2))
	f.Add(append([]byte(tableMagic), 0xff, 0xff, 0xff, 0xff))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeTable(b)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(b, []byte(tableMagic)) {
			if again, err := DecodeTable(st.Encode()); err != nil || !reflect.DeepEqual(again, st) {
				t.Errorf("older table re-encoded as version 3 reads back as %+v, %v", again, err)
			}
			return
		}
		if again := st.Encode(); !bytes.Equal(again, b) {
			t.Errorf("decoded table encodes differently:\n in %x\nout %x", b, again)
		}
	})
}

// TestCheckTable: a site table is used only if it is the one its binary's seal mark
// was written for; each way of not being that is named.
func TestCheckTable(t *testing.T) {
	good := sampleTable().Encode()
	mark := MarkFor(good)
	if st, err := CheckTable(good, mark); err != nil || len(st.Sites) != 3 {
		t.Fatalf("the sealed table: %v", err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	other := sampleTable()
	other.Text++
	newer := edit(func(b []byte) []byte { b[len(tableMagic)-1] = 9; return b })
	for _, c := range []struct {
		name  string
		table []byte
		mark  [4]uint64
		want  TableProblem
		says  string
	}{
		{"one byte flipped", edit(func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }), mark, TableMismatch, "CRC mismatch"},
		{"bad magic", edit(func(b []byte) []byte { b[0] ^= 1; return b }), mark, TableBadMagic, "bad magic"},
		{"truncated", good[:len(good)-10], mark, TableTruncated, "truncated"},
		{"truncated in the magic", good[:3], mark, TableTruncated, "truncated"},
		{"empty", nil, mark, TableTruncated, "truncated"},
		{"longer", append(append([]byte(nil), good...), 0), mark, TableMismatch, "the seal mark says"},
		{"another binary's", other.Encode(), mark, TableMismatch, "CRC mismatch"},
		{"newer version", newer, MarkFor(newer), TableNewer, "format version 9"},
		{"malformed", []byte(tableMagic + "xx"), MarkFor([]byte(tableMagic + "xx")), TableMalformed, "truncated"},
	} {
		_, err := CheckTable(c.table, c.mark)
		te, ok := err.(*TableError)
		if !ok || te.Problem != c.want || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v (%T), want problem %d saying %q", c.name, err, err, c.want, c.says)
		}
	}
	if err := (&TableError{File: "/bin/x", Problem: TableMismatch, Detail: "d"}).Error(); err != "/bin/x: site table (.gosdt.sites) unusable: d" {
		t.Errorf("message: %s", err)
	}
}

// TestCRC32C: the mark's checksum is hash/crc32's Castagnoli, which sealed binaries
// written before it hold, for every length up to a few words and a long input.
func TestCRC32C(t *testing.T) {
	b := make([]byte, 4099)
	for i := range b {
		b[i] = byte(i*131 + i>>3)
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	for n := range b {
		if n > 40 && n != len(b)-1 {
			continue
		}
		if got, want := crc32c(b[:n]), crc32.Checksum(b[:n], tab); got != want {
			t.Fatalf("crc32c of %d bytes: %#x, want %#x", n, got, want)
		}
	}
}
