package bench

import "unsafe"

// evict flushes the cache line holding p from every cache level (CLFLUSH; MFENCE, so
// that no later load is served before the flush completes).
//
//go:noescape
func evict(p unsafe.Pointer)

// evicts says whether evict really flushes on this architecture.
const evicts = true
