package registry

import (
	"sync/atomic"
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

// atHandTable is the registry's table of cells at hand (fold.go), as the first of
// len(reg.hitShards) cellAtHand; nil while nothing folds. An unsafe.Pointer, not an
// atomic.Pointer: the generic instantiation's types and methods cost every traced
// program about 2 KB for one load and one store.
var atHandTable unsafe.Pointer

// atHand is the cell at hand of hit counter i (P p's, site j's: p*hitStride+j); nil
// without a table or for an i past the hit counters.
func atHand(i int) *cellAtHand {
	base := atomic.LoadPointer(&atHandTable)
	if base == nil || uint(i) >= uint(len(reg.hitShards)) {
		return nil
	}
	return (*cellAtHand)(unsafe.Add(base, uintptr(i)*unsafe.Sizeof(cellAtHand{})))
}

// setAtHand publishes t as the table of cells at hand (nil or empty: none).
func setAtHand(t []cellAtHand) {
	var base unsafe.Pointer
	if len(t) > 0 {
		base = unsafe.Pointer(&t[0])
	}
	atomic.StorePointer(&atHandTable, base)
}

// haveAtHand reports whether a table of cells at hand is published.
func haveAtHand() bool { return atomic.LoadPointer(&atHandTable) != nil }
