//go:build race

package fprobe

import "unsafe"

// Under the race detector, sync/atomic's operations are calls to Go functions with a
// stack check, a safe point the return handler may not reach: these are NOSPLIT
// assembly (atomic_race_amd64.s). The race detector does not see them: the functions
// that use them for synchronisation are norace.

//go:noescape
func load64(p *uint64) uint64

//go:noescape
func store64(p *uint64, v uint64)

//go:noescape
func add64(p *uint64, d uint64)

//go:noescape
func cas64(p *uint64, old, new uint64) bool

//go:noescape
func loadPtr(p *unsafe.Pointer) unsafe.Pointer
