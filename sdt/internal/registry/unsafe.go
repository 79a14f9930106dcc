package registry

import (
	"unsafe"

	"github.com/gosdt/gosdt/internal/rawptr"
)

// coreOffset is where a definition keeps its descriptor pointer, from its start.
const coreOffset = unsafe.Offsetof(Head{}.core)

// headAt views the probe definition at addr, a package-level variable in data or bss
// that discovery proved to be a definition (its sites pass addr as fire's receiver).
func headAt(addr uintptr) *Head { return (*Head)(rawptr.At(addr)) }

// self is p's address, the value a definition's core field holds.
func (p *probe) self() uintptr { return uintptr(unsafe.Pointer(p)) }

// textAt is the n bytes of text at addr, as the CPU fetches them now (no copy).
func textAt(addr uintptr, n int) []byte { return unsafe.Slice((*byte)(rawptr.At(addr)), n) }

// atHandAt is element i of the table of cells at hand that starts at base
// (reg.atHand), whose length the caller checked.
func atHandAt(base *cellAtHand, i int) *cellAtHand {
	return (*cellAtHand)(unsafe.Add(unsafe.Pointer(base), uintptr(i)*unsafe.Sizeof(cellAtHand{})))
}
