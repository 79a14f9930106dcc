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

// LeafLoad begins with a load through its argument into its argument's register: a
// first instruction that may fault, so runs in place, and leaves no argument for a
// probe after it (arm64), or is too short for a jump (amd64). It is refused on both.
//
//go:noinline
//go:norace
func LeafLoad(p *int) int { return *p }

// Pair is what LeafLoadsFirst reads.
type Pair struct{ A, B int }

// LeafLoadsFirst begins with a load through its argument into registers that hold no
// argument: on arm64 the load runs in place, where a nil p faults at the function's
// own pc, and the probe is taken on the instruction after it.
//
//go:noinline
//go:norace
func LeafLoadsFirst(p *Pair) int { return p.A*3 + p.B }

// LeafLoadsArgs begins with loads through its arguments into their own registers
// (arm64): the loads may fault, so run in place, and leave no argument for a probe
// after them. Refused.
//
//go:noinline
//go:norace
func LeafLoadsArgs(p, q *int) int { return *p + *q }

// LeafFrame keeps an array in a frame of its own, small enough that the function has
// no stack check: on amd64 it begins with PUSHQ BP, one byte, so its probe's jump
// is punned (only the opcode byte written, DESIGN.md, "Punned jumps").
//
//go:noinline
//go:norace
func LeafFrame(i, v int) int {
	var a [8]int
	a[i&7] = v
	a[(i+1)&7] = v * 3
	return a[(i+1)&7] + a[i&7] + i
}

// LeafLoadScaled begins with a load through its argument into that argument's own
// register, then arithmetic a slot runs (amd64): the load runs in place, and a probe
// after it would not see the argument. Refused.
//
//go:noinline
//go:norace
func LeafLoadScaled(p *int) int { return *p >> 1 }

// LeafTwoRets returns from two places: its first RET is followed by the code of the
// second path, so it takes a punned jump (amd64; DESIGN.md, "Punned jumps").
//
//go:noinline
//go:norace
func LeafTwoRets(a, b int) int {
	if a > b {
		return a - b
	}
	return b*3 + a
}
