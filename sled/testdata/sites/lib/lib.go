// Package lib has probes whose sites land in other packages' functions, inlined there.
package lib

import "github.com/gosdt/gosdt/sdt"

var step = sdt.Define1[int]("sites", "step", "n")

// Step fires step; it is small enough to inline into its callers with its site.
func Step(n int) int {
	sdt.Probe1(&step, n)
	return n + 1
}

// Box is generic, and so is its probe's argument.
type Box[T sdt.Arg] struct{ P sdt.P1[T] }

// Put fires the box's probe: a generic probe in a generic method.
func (b *Box[T]) Put(v T) {
	if b.P.Enabled() {
		b.P.Fire(v)
	}
}
