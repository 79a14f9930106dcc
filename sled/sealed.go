package sled

import (
	"bytes"
	"fmt"
	"runtime"

	"github.com/gosdt/gosdt/internal/sealfmt"
)

// loadSealed builds the table of a sealed executable from its site table. A table that
// cannot be used is said (Table.Warning), and the sites are found in the text instead
// (Rescan).
func loadSealed(src Source) *Table {
	st, err := sealfmt.Self()
	if err == nil {
		// A PIE runs at an offset from its link-time addresses: runtime·text tells it.
		return FromTable(st, runtime.GOARCH, src, src.Base-st.Text)
	}
	if host == nil || len(src.Text) == 0 {
		return &Table{Reason: "sealed binary, but its site table cannot be used: " + err.Error() +
			"; sealed sites stay disabled, others keep their branch check"}
	}
	t := Rescan(host, src)
	t.Warning = RescanWarning(err, t)
	return t
}

// FromTable returns the sites of st, moved by bias, after checking that each site's
// text in src holds what the table says: its disabled sled (sealed in the file:
// Presealed) or the compiler's bytes (left for the runtime to seal). A site whose text
// is neither is refused with the reason, never patched. goarch is src's architecture.
func FromTable(st *sealfmt.SiteTable, goarch string, src Source, bias uint64) *Table {
	t := &Table{Sealed: true, Probes: st.Probes, TextBytes: len(src.Text)}
	if st.Arch != goarch {
		t.Reason = "site table is for " + st.Arch
		return t
	}
	for _, r := range st.Sites {
		s := siteOf(r, bias)
		s.syms = src.Syms
		switch {
		case !src.InData(uint64(s.Flag)):
			s.Refusal = refused(NotInData, fmt.Sprintf("site table names flag %#x, which is not in data or bss", s.Flag))
		case !s.Sealable():
		case (holds(src, s.Addr, s.Off) || uprobed(src, s.Addr, s.Off)) && alsoHold(src, s.Also, true):
			s.Presealed = true
		case holds(src, s.Addr, s.Orig) && alsoHold(src, s.Also, false):
		default:
			s.Refusal = refused(TextDiffers, "text holds neither the compiler's bytes nor the sled the site table records")
		}
		t.Sites = append(t.Sites, s)
	}
	return t
}

// siteOf returns the site a table's record r describes, moved by bias.
func siteOf(r sealfmt.Site, bias uint64) Site {
	b := uintptr(bias)
	s := Site{Addr: uintptr(r.Addr) + b, Len: r.Len, Flag: uintptr(r.Flag) + b, Kind: Kind(r.Kind),
		Orig: r.Orig, Off: r.Off, On: r.On, ToggleAt: r.ToggleAt, Toggle: r.Toggle, Note: r.Note,
		Refusal: Refusal{Cause: Cause(r.Cause), Detail: r.Detail}}
	if r.Return != 0 {
		s.Return = uintptr(r.Return) + b
	}
	for _, a := range r.Also {
		s.Also = append(s.Also, Rewrite{Addr: uintptr(a.Addr) + b, Orig: a.Orig, New: a.New})
	}
	return s
}

// Records returns the site table's records of sites, for sdtctl seal to write.
func Records(sites []Site) []sealfmt.Site {
	rs := make([]sealfmt.Site, len(sites))
	for i, s := range sites {
		rs[i] = sealfmt.Site{Addr: uint64(s.Addr), Len: s.Len, Flag: uint64(s.Flag), Kind: uint8(s.Kind), Return: uint64(s.Return),
			ToggleAt: s.ToggleAt, Toggle: s.Toggle, Orig: s.Orig, Off: s.Off, On: s.On, Note: s.Note,
			Cause: uint8(s.Refusal.Cause), Detail: s.Refusal.Detail}
		for _, a := range s.Also {
			rs[i].Also = append(rs[i].Also, sealfmt.Rewrite{Addr: uint64(a.Addr), Orig: a.Orig, New: a.New})
		}
	}
	return rs
}

func holds(src Source, addr uintptr, want []byte) bool {
	return len(want) > 0 && bytes.Equal(src.Mem.Read(uint64(addr), len(want)), want)
}

// uprobed reports whether the text at addr is the sled sled with a tracer's uprobe in
// its probe NOP: a tracer attached to the binary's USDT notes before it started.
func uprobed(src Source, addr uintptr, sled []byte) bool {
	return host != nil && host.Uprobed != nil && host.Uprobed(sled, src.Mem.Read(uint64(addr), len(sled)))
}

func alsoHold(src Source, also []Rewrite, rewritten bool) bool {
	for _, a := range also {
		want := a.Orig
		if rewritten {
			want = a.New
		}
		if !holds(src, a.Addr, want) {
			return false
		}
	}
	return true
}
