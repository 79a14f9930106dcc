package kernels

import "unsafe"

// evict flushes the cache line holding p from every cache level (CLFLUSH; MFENCE, so
// that no later load is served before the flush completes).
//
//go:noescape
func evict(p unsafe.Pointer)

// Evicts says whether evict really flushes on this architecture.
const Evicts = true
