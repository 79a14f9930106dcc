// Package hooks lets gosdt's own benchmarks, tools and tests reach what package sdt
// keeps out of its API: they are set by sdt's package initialisation, so they may be
// called by any package that imports sdt, once its own initialisation runs.
package hooks

import "github.com/gosdt/gosdt/patch"

var (
	// Unseal puts the compiler's own check back at the never-enabled sealed sites
	// that spec matches (see sdt's unseal), so that benchmarks compare a sealed site
	// with a branch check in one process.
	Unseal func(spec string) (int, error)
	// SetPatchOptions chooses how Enable and Disable rewrite sites and returns the
	// previous options.
	SetPatchOptions func(patch.Options) patch.Options
)
