package sled

import (
	"runtime"

	"github.com/gosdt/gosdt/arch"
)

// source is what discovery reads: a program's text, where its data is, and who names
// its functions. It is the running program (Discover) or a binary file (DiscoverFile).
type source struct {
	text   []byte
	base   uintptr // address of text[0]
	mem    arch.Memory
	inData func(addr uintptr) bool // data or bss, where probe definitions live
	syms   symbols
}

// bytes copies n bytes at addr.
func (s source) bytes(addr uintptr, n int) []byte {
	return append([]byte(nil), s.mem.Read(uint64(addr), n)...)
}

// symbols names functions: the running program's own tables, or a binary's .gopclntab.
type symbols interface {
	// entry returns the entry of the function that contains pc, 0 if none.
	entry(pc uintptr) uintptr
	// name names the function that contains pc ("" if none).
	name(pc uintptr) string
	// holder names the function that holds the probe statement at pc, its package,
	// file and line.
	holder(pc uintptr, probePkg string) (fn, module, file string, line int)
}

// live is the running program's symbols.
type live struct{}

func (live) entry(pc uintptr) uintptr {
	if f := runtime.FuncForPC(pc); f != nil {
		return f.Entry()
	}
	return 0
}

func (live) name(pc uintptr) string {
	if f := runtime.FuncForPC(pc); f != nil {
		return f.Name()
	}
	return ""
}

// self is the running program as a source.
func self() source {
	l := Self()
	return source{text: l.text(), base: l.Text, mem: liveText{l}, inData: l.InData, syms: live{}}
}
