package patch

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/rawptr"
)

// CanAtomic reports whether the write is one whole, aligned instruction, stored with one
// 32-bit store. The caller guarantees that old and new are instructions the ARM ARM allows
// to be modified concurrently with their execution (B, NOP, BL, ...; section B2.2.5).
func CanAtomic(addr uintptr, n int) bool {
	return n == 4 && addr%4 == 0
}

func storeAtomic(addr uintptr, b []byte) {
	p := (*uint32)(rawptr.At(addr)) // text
	atomic.StoreUint32(p, binary.LittleEndian.Uint32(b))
}

// flushRange makes the instruction fetch of every core see the new bytes.
func flushRange(addr uintptr, n int) {
	syncICache(addr, addr+uintptr(n))
}

// syncICache runs DC CVAU over [start, end) by D-cache line, DSB ISH, IC IVAU by I-cache
// line, DSB ISH, ISB, with the line sizes from CTR_EL0 (as the kernel's
// __flush_icache_range and libgcc's __clear_cache do).
func syncICache(start, end uintptr)

// serialize executes ISB, discarding instructions fetched before it.
func serialize()
