package target

// Leaves: functions without a stack check whose first instruction a slot can run out
// of line (fprobe's DESIGN.md, "Leaves"), on amd64 and arm64. norace: the race
// detector's instrumentation would give them calls, and so a stack check.

// LeafPtr reads through a pointer argument.
//
//go:noinline
//go:norace
func LeafPtr(p *int, k int) int {
	k *= 100003
	if k == -100003 { // the load after a branch: on arm64 too the multiply comes first
		return 0
	}
	return *p + k
}

// LeafLoop spins n times without a call: preemptible only asynchronously.
//
//go:noinline
//go:norace
func LeafLoop(n int) int {
	s := n * 100003
	for i := 0; i < n; i++ {
		s = s*31 + i
	}
	return s
}

// LeafFloat takes integer and floating-point arguments.
//
//go:noinline
//go:norace
func LeafFloat(a int, x float64, b int) float64 {
	return float64(a*1000003-b) + x*x
}

var leafGlobal = 7

// LeafGlobal reads a global first: an operand relative to its pc (RIP; ADRP).
//
//go:noinline
//go:norace
func LeafGlobal(a int) int { return leafGlobal + a }

// LeafLoad begins with a load through its argument: a first instruction that may fault
// (arm64) or is too short (amd64) for a slot. It is refused on both.
//
//go:noinline
//go:norace
func LeafLoad(p *int) int { return *p + 1 }
