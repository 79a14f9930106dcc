//go:build amd64 || arm64

// Package spin holds a loop that never reaches a preemption point, for the tests of
// package patch: a P held by it can only be stopped when it returns.
package spin

// WhileLess spins (PAUSE on amd64, YIELD and a load-acquire on arm64) while *addr < v,
// at most iters times, and returns the last value read. Being assembly without calls,
// it is no asynchronous safe point: the runtime cannot preempt it.
//
//go:noescape
func WhileLess(addr *uint32, v uint32, iters uint64) uint32
