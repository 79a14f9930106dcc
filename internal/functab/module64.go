package functab

import (
	"encoding/binary"
	"unsafe"

	"github.com/gosdt/gosdt/internal/goversion"
)

// FindGofunc finds go:func.* in a binary without a symbol table as the runtime does:
// in runtime.firstmoduledata, which starts with a pointer to the pclntab (at pclnAddr)
// and has runtime.text in its text field. data is the bytes of a section that may hold
// it (.go.module since go1.26, .noptrdata before), loaded at addr; goVersion is the
// binary's Go (its build information), whose release says where gofunc is. 0 if it is
// not there or the release's layout was not read.
func FindGofunc(data []byte, addr, pclnAddr, text uint64, goVersion string) uint64 {
	var md moduleData[uint64]
	at, ok := moduleTail(goversion.Of(goVersion))
	if !ok {
		return 0
	}
	textOff := uint64(unsafe.Offsetof(md.text))
	gofuncOff := uint64(unsafe.Offsetof(md.tail)) + 8*uint64(at)
	le := binary.LittleEndian
	for i := (8 - addr%8) % 8; i+uint64(unsafe.Sizeof(md)) <= uint64(len(data)); i += 8 {
		if le.Uint64(data[i:]) == pclnAddr && le.Uint64(data[i+textOff:]) == text {
			return le.Uint64(data[i+gofuncOff:])
		}
	}
	return 0
}

// SetGofunc gives t its funcdata, go:func.* on: the inline trees.
func (t *Table) SetGofunc(b []byte) { t.gofunc = b }

// HeaderTextStart is the pcHeader's textStart, written before go1.26 (0 since).
func HeaderTextStart(pcln []byte) uint64 {
	if len(pcln) < headerSize {
		return 0
	}
	return binary.LittleEndian.Uint64(pcln[headerTextStart:])
}
