package sled

import (
	"reflect"
	"testing"

	"github.com/gosdt/gosdt/internal/sealfmt"
)

// TestTableRecordsSites: a site written to a site table (Records) reads back from it
// as the same site (siteOf), moved by the bias a PIE runs at; the kinds and causes the
// format knows are sled's.
func TestTableRecordsSites(t *testing.T) {
	if sealfmt.Kinds != int(Guard)+1 || sealfmt.Causes != int(NotInData)+1 || sealfmt.CauseUnproven != int(Unproven) {
		t.Fatalf("sealfmt knows %d kinds, %d causes, unproven %d; sled has %d, %d, %d",
			sealfmt.Kinds, sealfmt.Causes, sealfmt.CauseUnproven, Guard+1, NotInData+1, Unproven)
	}
	sites := []Site{
		{Addr: 0x401234, Len: 4, Flag: 0x5a0010, Kind: Fire, Return: 0x401244, Toggle: 4,
			Orig: []byte{1, 2, 3, 4}, Off: []byte{5, 6, 7, 8}, On: []byte{0x1f, 0x20, 0x03, 0xd5},
			Note: "flag load kept",
			Also: []Rewrite{{Addr: 0x401220, Orig: []byte{9, 9, 9, 9}, New: []byte{0x1f, 0x20, 0x03, 0xd5}}}},
		{Addr: 0x401300, Len: 2, Flag: 0x5a0020, Kind: Guard, Orig: []byte{0x74, 0x10},
			Refusal: Refusal{Cause: NotInData, Detail: "flag outside data"}},
	}
	st, err := sealfmt.DecodeTable((&sealfmt.SiteTable{Arch: "arm64", Sites: Records(sites)}).Encode())
	if err != nil {
		t.Fatal(err)
	}
	const bias = 0x7f000000
	for i, r := range st.Sites {
		want := sites[i]
		want.Addr += bias
		want.Flag += bias
		if want.Return != 0 {
			want.Return += bias
		}
		want.Also = append([]Rewrite(nil), want.Also...)
		for j := range want.Also {
			want.Also[j].Addr += bias
		}
		if got := siteOf(r, bias); !reflect.DeepEqual(got, want) {
			t.Errorf("site %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}
