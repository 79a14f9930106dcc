package sled

import (
	"unsafe"

	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/rawptr"
)

// Layout is where this executable's text and pointer-bearing data are in memory, and
// its function table.
type Layout struct {
	Text, Etext uintptr
	Data, Edata uintptr
	Bss, Ebss   uintptr
	tab         *functab.Table // nil where the module data did not check out
	namesOK     bool           // the table's names are the runtime's
	noInline    string         // why its inline trees cannot be read ("": they can)
}

// Self returns the layout of the running executable.
func Self() Layout {
	m := functab.Self()
	return Layout{Text: m.Text, Etext: m.Etext, Data: m.Data, Edata: m.Edata, Bss: m.Bss, Ebss: m.Ebss,
		tab: m.Table, namesOK: m.NamesOK, noInline: m.NoInline}
}

// function returns the entry and the end (the next function's entry) of the function
// whose code holds pc, from the runtime's function table; zeros if none does.
func (l Layout) function(pc uintptr) (entry, end uintptr) {
	if l.tab == nil {
		return 0, 0
	}
	i := l.tab.Find(uint64(pc))
	if i < 0 {
		return 0, 0
	}
	return uintptr(l.tab.Entry(i)), uintptr(l.tab.End(i))
}

// InData reports whether addr lies in data or bss, where probe definitions live.
func (l Layout) InData(addr uintptr) bool {
	return (addr >= l.Data && addr < l.Edata) || (addr >= l.Bss && addr < l.Ebss)
}

// text returns the executable's text as a byte slice aliasing the live code. Callers
// only read it; writes go through package patch.
func (l Layout) text() []byte {
	if l.Etext <= l.Text {
		return nil
	}
	return unsafe.Slice((*byte)(at(l.Text)), l.Etext-l.Text)
}

// liveText reads code bytes of the running process, clipped to the text section so
// that a read never faults. It implements the arch packages' Memory.
type liveText struct{ Layout }

func (m liveText) Read(pc uint64, n int) []byte {
	t := m.text()
	if pc < uint64(m.Text) || pc >= uint64(m.Etext) || n <= 0 {
		return nil
	}
	off := uintptr(pc) - m.Text
	end := min(off+uintptr(n), uintptr(len(t)))
	return t[off:end:end]
}

// FindWord returns the addresses of every pointer-aligned word in data and bss that
// holds v. Package sdt uses it to find a probe definition that has no patchable site
// (it holds a pointer to its descriptor), so that its flag can still be switched.
// It reads every global while other goroutines may write some (a timer's goroutine
// taking a package's mutex): hidden from the race detector, which would report each
// such word. Aligned words are read whole, and sdt checks what it finds.
//
//go:norace
func (l Layout) FindWord(v uintptr) []uintptr {
	var found []uintptr
	const w = unsafe.Sizeof(uintptr(0))
	for _, r := range [][2]uintptr{{l.Data, l.Edata}, {l.Bss, l.Ebss}} {
		lo := (r[0] + w - 1) &^ (w - 1)
		if r[1] <= lo {
			continue
		}
		words := unsafe.Slice((*uintptr)(at(lo)), (r[1]-lo)/w)
		for i, x := range words {
			if x == v {
				found = append(found, lo+uintptr(i)*w)
			}
		}
	}
	return found
}

// at is the executable's text, data or bss at addr.
func at(addr uintptr) unsafe.Pointer { return rawptr.At(addr) }
