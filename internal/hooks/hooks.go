// Package hooks holds what gosdt's own benchmarks, tools and tests choose beyond
// package sdt's API: how Enable and Disable rewrite sites, which the registry reads.
package hooks

import (
	"sync"

	"github.com/gosdt/gosdt/patch"
)

// options is how switches rewrite sites: the registry sets it from the environment
// at its initialisation, and reads it at each switch.
var options struct {
	sync.Mutex
	o patch.Options
}

// SetPatchOptions chooses how Enable and Disable rewrite sites (atomic single-store
// toggles, a stop-the-world rendezvous, or auto) and returns the previous options.
func SetPatchOptions(o patch.Options) patch.Options {
	options.Lock()
	defer options.Unlock()
	old := options.o
	options.o = o
	return old
}

// PatchOptions is how Enable and Disable rewrite sites now.
func PatchOptions() patch.Options {
	options.Lock()
	defer options.Unlock()
	return options.o
}
