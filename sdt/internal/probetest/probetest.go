// Package probetest holds probes and small functions with sites for sdt's tests: a
// probe defined in one package and fired from code inlined into another.
package probetest

import "github.com/gosdt/gosdt/sdt"

// Op is fired by Step, which is small enough to be inlined into its callers.
var Op = sdt.Define1[int]("probetest", "op", "n")

// Step fires Op; callers in other packages inline it, so the site is theirs.
func Step(n int) {
	sdt.Probe1(&Op, n)
}

// Shared is fired from several functions in several packages.
var Shared = sdt.Define1[string]("probetest", "shared", "from")

// FireShared fires Shared from this package, out of line.
//
//go:noinline
func FireShared() { Shared.Fire("probetest") }
