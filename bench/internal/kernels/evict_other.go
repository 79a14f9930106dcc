//go:build !amd64

package kernels

import "unsafe"

// evict is a no-op where there is no flush in Go assembly here: the cold shape is
// skipped (see Evicts).
//
//go:noinline
func evict(p unsafe.Pointer) { _ = p }

// Evicts says whether evict really flushes on this architecture.
const Evicts = false
