package sled

import (
	"reflect"
	"runtime"
	"unsafe"
)

// The bounds of this executable's text, data and bss are the runtime's module data,
// which every Go program has, whatever its architecture or way of linking (PIE,
// static, external): runtime.lastmoduledatap is the main executable's moduledata
// (there are no others without plugins), and the linkname to it is one the runtime
// keeps for packages outside the standard library. moduledata's first fields have had
// this layout since go1.16 (runtime/symtab.go); moduleBounds checks what it reads
// against the runtime's own function table and this package's own variables before
// trusting it, and returns zeros otherwise: then there is no text to scan and no data
// to search, and probes work through their branch check.

//go:linkname lastmoduledatap runtime.lastmoduledatap
var lastmoduledatap unsafe.Pointer

// moduleData mirrors the start of runtime.moduledata up to the bounds of bss.
type moduleData struct {
	pcHeader                                                   uintptr
	funcnametab, cutab, filetab, pctab, pclntable, ftab        [3]uintptr
	findfunctab, minpc, maxpc                                  uintptr
	text, etext, noptrdata, enoptrdata, data, edata, bss, ebss uintptr
}

// inData and inBss are variables the linker puts in data (a pointer, initialised
// statically) and in bss (a pointer, zero): where moduleBounds looks for them.
var (
	boundsAnchor int
	inData       = &boundsAnchor
	inBss        *int
)

// moduleBounds returns the bounds of this executable's text, data (pointer-bearing
// initialised data) and bss (pointer-bearing zeroed data), or zeros where what the
// runtime's module data says does not check out. Probe definitions contain a pointer,
// so they always live in data or bss.
func moduleBounds() (text, etext, data, edata, bss, ebss uintptr) {
	if lastmoduledatap == nil {
		return
	}
	m := (*moduleData)(lastmoduledatap)
	d, b := uintptr(unsafe.Pointer(&inData)), uintptr(unsafe.Pointer(&inBss))
	if m.data > d || d >= m.edata || m.bss > b || b >= m.ebss {
		return // not the layout this package knows
	}
	data, edata, bss, ebss = m.data, m.edata, m.bss, m.ebss
	// Text is read, to be scanned: its bounds must be the runtime's own, in which
	// this function lies. On wasm a pc is no address of linear memory: no text.
	pc := reflect.ValueOf(moduleBounds).Pointer()
	if runtime.GOARCH != "wasm" && m.text <= m.minpc && m.minpc <= pc && pc < m.maxpc && m.maxpc <= m.etext &&
		runtime.FuncForPC(m.minpc) != nil && runtime.FuncForPC(m.maxpc-1) != nil {
		text, etext = m.text, m.etext
	}
	return
}
