//go:build amd64

package fprobe

// Sequentially consistent operations on a uint64, callable from the return
// handler's nosplit path in every build (atomic_amd64.s). The race detector does not
// see them: the functions that use them for synchronisation are norace.

//go:noescape
func load64(p *uint64) uint64

//go:noescape
func store64(p *uint64, v uint64)

//go:noescape
func add64(p *uint64, d uint64)

//go:noescape
func cas64(p *uint64, old, new uint64) bool
