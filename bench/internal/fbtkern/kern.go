// Package fbtkern holds the functions whose fbt cost the benchmarks measure. bench's
// fbt.rules instruments Work, Pair and Leaf, never the loops that call them, so that
// a build with the rules and one without differ only in the instrumented functions.
package fbtkern

import "errors"

var errNeg = errors.New("negative")

// Work is a function that is not inlined: the rules add its entry and return sites.
//
//go:noinline
func Work(a, b int) int { return a*31 + b }

// Pair has two results and two returns.
//
//go:noinline
func Pair(k int) (int, error) {
	if k < 0 {
		return 0, errNeg
	}
	return k * 2, nil
}

// Mid already has a frame (it calls Work): the rules add only their sites to it.
//
//go:noinline
func Mid(a, b int) int { return Work(a, b) + 1 }

// Leaf is inlined into its callers when not instrumented.
func Leaf(a, b int) int { return a ^ b + 1 }

// LoopWork calls Work n times.
//
//go:noinline
func LoopWork(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s = Work(s, i)
	}
	return s
}

// LoopPair calls Pair n times.
//
//go:noinline
func LoopPair(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		v, err := Pair(i)
		if err == nil {
			s += v
		}
	}
	return s
}

// LoopLeaf calls Leaf n times.
//
//go:noinline
func LoopLeaf(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s = Leaf(s, i)
	}
	return s
}

// LoopMid calls Mid n times.
//
//go:noinline
func LoopMid(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s = Mid(s, i)
	}
	return s
}
