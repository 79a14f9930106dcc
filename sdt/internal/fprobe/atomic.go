//go:build !race || !(amd64 || arm64)

package fprobe

import (
	"sync/atomic"
	"unsafe"
)

// Sequentially consistent operations on a uint64 for the return handler's nosplit
// path: sync/atomic's, which the compiler turns into instructions (no call, no safe
// point); nosplit should one not be inlined. Under the race detector they are calls
// with a stack check: atomic_race_$GOARCH.go.

//go:nosplit
func load64(p *uint64) uint64 { return atomic.LoadUint64(p) }

//go:nosplit
func store64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

//go:nosplit
func add64(p *uint64, d uint64) { atomic.AddUint64(p, d) }

//go:nosplit
func cas64(p *uint64, old, new uint64) bool { return atomic.CompareAndSwapUint64(p, old, new) }

//go:nosplit
func loadPtr(p *unsafe.Pointer) unsafe.Pointer { return atomic.LoadPointer(p) }
