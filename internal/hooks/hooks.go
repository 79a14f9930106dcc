// Package hooks holds what gosdt's own benchmarks, tools and tests choose beyond
// package sdt's API: how Enable and Disable rewrite sites, which the registry reads.
package hooks

import (
	"sync/atomic"

	"github.com/gosdt/gosdt/patch"
)

// options is how switches rewrite sites: the registry sets it from the environment
// at its initialisation, and reads it at each switch; nil: the zero Options.
var options atomic.Pointer[patch.Options]

// SetPatchOptions chooses how Enable and Disable rewrite sites (atomic single-store
// toggles, a stop-the-world rendezvous, or auto) and returns the previous options.
func SetPatchOptions(o patch.Options) patch.Options {
	if old := options.Swap(&o); old != nil {
		return *old
	}
	return patch.Options{}
}

// PatchOptions is how Enable and Disable rewrite sites now.
func PatchOptions() patch.Options {
	if o := options.Load(); o != nil {
		return *o
	}
	return patch.Options{}
}
