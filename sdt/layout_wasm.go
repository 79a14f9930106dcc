package sdt

import (
	"unsafe"
	_ "unsafe" // go:linkname

	"github.com/gosdt/gosdt/sled"
)

// On wasm the linker's section symbols cannot be named from assembly, so sled finds no
// data to search; the runtime's module data holds the same bounds. With them, a
// definition is found by the descriptor pointer it holds, and Enable switches its flag:
// probes work through their branch check.

//go:linkname lastmoduledatap runtime.lastmoduledatap
var lastmoduledatap unsafe.Pointer

// moduleBounds mirrors the start of runtime.moduledata (go1.22 to go1.26) up to the
// bounds of bss. selfLayout checks what it reads before it trusts it.
type moduleBounds struct {
	pcHeader                                                   uintptr
	funcnametab, cutab, filetab, pctab, pclntable, ftab        [3]uintptr
	findfunctab, minpc, maxpc                                  uintptr
	text, etext, noptrdata, enoptrdata, data, edata, bss, ebss uintptr
}

func selfLayout() sled.Layout {
	l := sled.Self()
	if l.Edata > l.Data || lastmoduledatap == nil {
		return l
	}
	m := (*moduleBounds)(lastmoduledatap)
	// A layout that does not hold this package's own variables is not the module
	// data we expect (another Go version): then nothing is searched, and Enable
	// says it is not supported.
	self := uintptr(unsafe.Pointer(&reg))
	if m.data > m.edata || m.bss > m.ebss || !((self >= m.data && self < m.edata) || (self >= m.bss && self < m.ebss)) {
		return l
	}
	l.Data, l.Edata, l.Bss, l.Ebss = m.data, m.edata, m.bss, m.ebss
	return l
}
