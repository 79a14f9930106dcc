// Package tree is a call tree for sdtctl's export tests of run-time function probes:
// Handle calls A, B and C in turn, and B calls D, which yields its P, so that a
// goroutine's calls begin on one P and end on another.
package tree

import (
	"fmt"
	"runtime"
)

// Handle is a request: A, B and C in turn.
//
//go:noinline
func Handle(i int) int { return A(i) + B(i) + C(i) }

// A formats i.
//
//go:noinline
func A(i int) int { return len(fmt.Sprint(i)) }

// B calls D.
//
//go:noinline
func B(i int) int { return D(i) + 1 }

// C formats i twice.
//
//go:noinline
func C(i int) int { return len(fmt.Sprint(i, i)) }

// D yields its P before it formats i.
//
//go:noinline
func D(i int) int {
	runtime.Gosched()
	return len(fmt.Sprint(-i))
}
