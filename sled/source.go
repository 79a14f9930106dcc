package sled

import (
	"runtime"

	"github.com/gosdt/gosdt/arch"
)

// Source is what discovery reads: a program's text, where its data is, and who names
// its functions. It is the running program (Discover) or a binary file (package
// sled/offline).
type Source struct {
	Text   []byte
	Base   uint64                 // address of Text[0]
	Mem    arch.Memory            // the text by address; reads never fault
	InData func(addr uint64) bool // data or bss, where probe definitions live
	Syms   Symbols
	// Search lists the parts of Text, as offsets [lo, hi) in order, that can hold
	// sites; nil: all of it.
	Search [][2]int
	// SearchBy says how Search was chosen, or why it is nil (Table.Search).
	SearchBy string
}

// bytes copies n bytes at addr.
func (s Source) bytes(addr uint64, n int) []byte {
	return append([]byte(nil), s.Mem.Read(addr, n)...)
}

// Symbols names a program's functions: the running program's own tables, or a binary's.
type Symbols interface {
	// Func returns the extent of the function whose code holds pc: its entry and its
	// end, the next function's entry (padding included); zeros if none holds it.
	Func(pc uint64) (entry, end uint64)
	// Name names the function that contains pc ("" if none).
	Name(pc uint64) string
	// Holder names the function that holds the probe statement at pc (the innermost
	// frame of the inline tree outside the probe package), with its file and line.
	Holder(pc uint64) Holder
	// Position returns the file and line of the code at pc itself (of the innermost
	// inlined function there).
	Position(pc uint64) (file string, line int)
}

// live is the running program's symbols: its function table, and the runtime.
type live struct{ Layout }

func (l live) Func(pc uint64) (entry, end uint64) {
	e, n := l.function(uintptr(pc))
	return uint64(e), uint64(n)
}

func (live) Position(pc uint64) (file string, line int) {
	// The innermost frame is the pc's own position (see Holder for the trailing 0).
	f, _ := runtime.CallersFrames([]uintptr{uintptr(pc) + 1, 0}).Next()
	return f.File, f.Line
}

func (live) Name(pc uint64) string {
	if f := runtime.FuncForPC(uintptr(pc)); f != nil {
		return f.Name()
	}
	return ""
}

// self is the running program as a source.
func self() Source {
	l := Self()
	search, by := l.searchRanges()
	return Source{Text: l.text(), Base: uint64(l.Text), Mem: liveText{l},
		InData: func(addr uint64) bool { return l.InData(uintptr(addr)) }, Syms: live{l},
		Search: search, SearchBy: by}
}
