//go:build !amd64

package bench

import "unsafe"

// evict is a no-op where there is no flush in Go assembly here: the cold shape is
// skipped (see evicts).
//
//go:noinline
func evict(p unsafe.Pointer) { _ = p }

// evicts says whether evict really flushes on this architecture.
const evicts = false
