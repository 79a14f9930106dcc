package sled

import (
	"bytes"
	"fmt"
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

// moduleData mirrors the start of runtime.moduledata up to the bounds of bss, and on
// to the base of the functions' funcdata (gofunc) in the layout of go1.20 and later,
// whose pclntab has the magic pclntabMagic: only inline trees are read past ebss, and
// only after checkInlineTrees has compared them with the runtime (inltree.go).
type moduleData struct {
	pcHeader                                                   uintptr
	funcnametab, cutab, filetab, pctab, pclntable, ftab        [3]uintptr
	findfunctab, minpc, maxpc                                  uintptr
	text, etext, noptrdata, enoptrdata, data, edata, bss, ebss uintptr
	noptrbss, enoptrbss, covctrs, ecovctrs                     uintptr
	end, gcdata, gcbss, types, etypes, rodata, gofunc          uintptr
	epclntab                                                   uintptr
}

// inData and inBss are variables the linker puts in data (a pointer, initialised
// statically) and in bss (a pointer, zero): where moduleBounds looks for them.
var (
	boundsAnchor int
	inData       = &boundsAnchor
	inBss        *int
)

// functab is runtime.functab: a function's entry, as an offset from text, and where
// its _func is. The function table is sorted by entry and ends with one entry more,
// the end of the last function.
type functab struct{ entryoff, funcoff uint32 }

// moduleBounds returns the bounds of this executable's text, data (pointer-bearing
// initialised data) and bss (pointer-bearing zeroed data), and its function table, or
// zeros where what the runtime's module data says does not check out. Probe
// definitions contain a pointer, so they always live in data or bss.
func moduleBounds() (l Layout) {
	if lastmoduledatap == nil {
		return
	}
	m := (*moduleData)(lastmoduledatap)
	d, b := uintptr(unsafe.Pointer(&inData)), uintptr(unsafe.Pointer(&inBss))
	if m.data > d || d >= m.edata || m.bss > b || b >= m.ebss {
		return // not the layout this package knows
	}
	l.Data, l.Edata, l.Bss, l.Ebss = m.data, m.edata, m.bss, m.ebss
	// Text is read, to be scanned, and its functions found in the function table:
	// the text must be the runtime's own, in which this function lies, and the table
	// must give the entries the runtime gives. On wasm a pc is no address of linear
	// memory: no text.
	pc := reflect.ValueOf(moduleBounds).Pointer()
	if runtime.GOARCH == "wasm" || m.ftab[1] < 2 || m.text > m.minpc || m.minpc > pc || pc >= m.maxpc || m.maxpc > m.etext {
		return
	}
	ftab := unsafe.Slice((*functab)(at(m.ftab[0])), m.ftab[1])
	for _, i := range []int{0, len(ftab) / 2, len(ftab) - 2} {
		entry := m.text + uintptr(ftab[i].entryoff)
		if f := runtime.FuncForPC(entry); f == nil || f.Entry() != entry {
			return
		}
	}
	if m.text+uintptr(ftab[0].entryoff) != m.minpc || m.text+uintptr(ftab[len(ftab)-1].entryoff) != m.maxpc {
		return
	}
	l.Text, l.Etext, l.funcs = m.text, m.etext, ftab
	l.funcnames = unsafe.Slice((*byte)(at(m.funcnametab[0])), m.funcnametab[1])
	l.pclntable = unsafe.Slice((*byte)(at(m.pclntable[0])), m.pclntable[1])
	for _, i := range []int{0, len(ftab) / 2, len(ftab) - 2} {
		i = lastAt(ftab, i)
		f := runtime.FuncForPC(m.text + uintptr(ftab[i].entryoff))
		if f == nil || !printedAs(l.funcName(i), f.Name()) {
			l.funcnames, l.pclntable = nil, nil // names unknown: discovery searches all the text
			break
		}
	}
	l.inl = inlineTables(m)
	return
}

// inlineTables returns where the functions' inline trees are, if the pclntab has the
// layout this package reads (checked further by checkInlineTrees before use).
func inlineTables(m *moduleData) inlTables {
	if magic := *(*uint32)(at(m.pcHeader)); magic != pclntabMagic {
		return inlTables{why: fmt.Sprintf("pclntab magic %#x, not %#x", magic, uint32(pclntabMagic))}
	}
	// The funcdata lie in the pclntab, after its tables (go1.26); the pctab too.
	if m.gofunc < m.pcHeader || m.gofunc >= m.epclntab || m.pctab[0] < m.pcHeader || m.pctab[0]+m.pctab[1] > m.epclntab {
		return inlTables{why: "funcdata or pc-value tables outside the pclntab"}
	}
	q := uint32(*(*uint8)(at(m.pcHeader + 6))) // pcHeader.minLC
	if q == 0 {
		return inlTables{why: "pclntab: no pc quantum"}
	}
	return inlTables{
		pctab:   unsafe.Slice((*byte)(at(m.pctab[0])), m.pctab[1]),
		gofunc:  unsafe.Slice((*byte)(at(m.gofunc)), m.epclntab-m.gofunc),
		quantum: q,
	}
}

// lastAt returns the last function of ftab (but its end marker) that starts where the
// i-th does: the one FuncForPC names at that entry. Functions share an entry only as
// aliases in C code linked in (the race detector's).
func lastAt(ftab []functab, i int) int {
	for i+2 < len(ftab) && ftab[i+1].entryoff == ftab[i].entryoff {
		i++
	}
	return i
}

// printedAs reports whether a function named name in the name table is the one the
// runtime prints as printed: the runtime prints what a generic function's outermost
// brackets hold as "..." (runtime.funcNamePiecesForPrint).
func printedAs(name []byte, printed string) bool {
	i := bytes.IndexByte(name, '[')
	j := bytes.LastIndexByte(name, ']')
	if i < 0 || j <= i {
		return string(name) == printed
	}
	return len(printed) == i+5+len(name)-j-1 && string(name[:i]) == printed[:i] &&
		printed[i:i+5] == "[...]" && string(name[j+1:]) == printed[i+5:]
}

// funcName returns the name of the i-th function of the function table, from the
// runtime's _func record (its nameOff, after the 4-byte entryOff) and name table.
func (l Layout) funcName(i int) []byte {
	off := int(l.funcs[i].funcoff)
	if off < 0 || off+8 > len(l.pclntable) {
		return nil
	}
	name := int(*(*int32)(unsafe.Pointer(&l.pclntable[off+4])))
	if name == 0 {
		return []byte{} // no name, as for the runtime (its first record)
	}
	if name < 0 || name >= len(l.funcnames) {
		return nil
	}
	n := l.funcnames[name:]
	if end := bytes.IndexByte(n, 0); end >= 0 {
		n = n[:end]
	}
	return n
}
