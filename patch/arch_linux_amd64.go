package patch

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/gosdt/gosdt/arch/amd64"
	"github.com/gosdt/gosdt/internal/rawptr"
)

// CanAtomic reports whether [addr, addr+n) lies inside one aligned 8-byte word, which an
// amd64 core stores and other cores fetch as a unit: the rule sleds are laid out by.
func CanAtomic(addr uintptr, n int) bool { return amd64.AtomicStore(uint64(addr), n) }

// storeAtomic merges b into the aligned word holding it and stores the word at once. The
// other bytes of the word cannot change meanwhile: only this package writes text, under mu.
func storeAtomic(addr uintptr, b []byte) {
	base := addr &^ 7
	p := (*uint64)(rawptr.At(base)) // text
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], atomic.LoadUint64(p))
	copy(w[addr-base:], b)
	atomic.StoreUint64(p, binary.LittleEndian.Uint64(w[:]))
}

// flushRange is a no-op: x86 keeps instruction fetch coherent with stores; what remains is
// serialization, which the rendezvous release and syncCores provide.
func flushRange(addr uintptr, n int) {}

// serialize executes CPUID, an architecturally serializing instruction.
func serialize()
