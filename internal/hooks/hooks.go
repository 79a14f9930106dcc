// Package hooks lets gosdt's own benchmarks, tools and tests reach what package sdt
// keeps out of its API: they are set by sdt's package initialisation, so they may be
// called by any package that imports sdt, once its own initialisation runs.
package hooks

import "github.com/gosdt/gosdt/patch"

var (
	// SetPatchOptions chooses how Enable and Disable rewrite sites and returns the
	// previous options.
	SetPatchOptions func(patch.Options) patch.Options
)
