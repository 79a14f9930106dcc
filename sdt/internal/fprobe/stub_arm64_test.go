package fprobe

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/gosdt/gosdt/arch/arm64"
)

// TestStubLayout: the offsets stub_arm64.s reads a config and the site table at are
// the Go declarations'.
func TestStubLayout(t *testing.T) {
	var c config
	for name, got := range map[string][2]uintptr{
		"ctxt":   {unsafe.Offsetof(c.ctxt), 24},
		"frame":  {unsafe.Offsetof(c.frame), 32},
		"nspill": {unsafe.Offsetof(c.nspill), 48},
		"spills": {unsafe.Offsetof(c.spills), 56},
	} {
		if got[0] != got[1] {
			t.Errorf("config.%s at %d, stub_arm64.s reads %d", name, got[0], got[1])
		}
	}
	if tabBits != 12 || tabSize != 4096 {
		t.Errorf("table of %d (%d bits): stub_arm64.s's LOOKUP searches 4096 (12)", tabSize, tabBits)
	}
}

// TestPatchedBL: what an entry and a return probe write is one BL, which the decoder
// reads as a call to the stub, over the instructions the shapes name; detached, the
// original words are back.
func TestPatchedBL(t *testing.T) {
	f := lookup(t, "Large")
	estub, rstub := stubAddrs()
	word := func(pc uintptr) uint32 { return binary.LittleEndian.Uint32(text(pc, 4)) }
	if w := word(f.site); w != 0xd10023fd {
		t.Fatalf("entry site %#x holds %#08x, not SUB $8, RSP, R29", f.site, w)
	}
	if err := Set([]Change{{Func: f, Entry: func(*Func, *Args) {}, Return: true}}); err != nil {
		t.Fatal(err)
	}
	want := map[uintptr]uintptr{f.site: estub}
	for _, r := range f.retSites {
		want[uintptr(r.Addr)] = rstub
	}
	for pc, stub := range want {
		if call := arm64.CallTo(uint64(pc), uint64(stub)); string(text(pc, 4)) != string(call) {
			t.Errorf("at %#x: % x, want BL %#x (% x)", pc, text(pc, 4), stub, call)
		}
	}
	if err := Set([]Change{{Func: f}}); err != nil {
		t.Fatal(err)
	}
	if string(text(f.site, 4)) != string(f.orig) {
		t.Errorf("entry % x after detach, want % x", text(f.site, 4), f.orig)
	}
	for _, r := range f.retSites {
		if w := word(uintptr(r.Addr)); string(text(uintptr(r.Addr), 4)) != string(r.Orig) || (w != 0xf85f83fd && w != 0xa97ffbfd) {
			t.Errorf("return at %#x: %#08x after detach, want % x", r.Addr, w, r.Orig)
		}
	}
}
