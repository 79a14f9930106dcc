// Package target holds the functions the tests of package fprobe put probes on: of
// every argument kind and frame shape the stubs meet. Each checks what it was given
// where it can, so that a probe that corrupts an argument is seen by the function.
package target

import "errors"

//go:noinline
func Leaf(a, b int) int { return a*b + a }

// Small has a small frame: pointer, string and int arguments.
//
//go:noinline
func Small(p *[64]int, s string, n int) int {
	p[0] = n + len(s) + Leaf(n, 2)
	return p[0]
}

// Large has a frame over the small limit (the LEAQ form of the stack check).
//
//go:noinline
func Large(p *int, b bool, f float64) (*int, int) {
	var buf [200]int
	buf[Leaf(3, 1)] = *p
	if b {
		return nil, 0
	}
	return p, buf[Leaf(4, 1)] + int(f)
}

// Narrow takes arguments narrower than a word, a bool and a float32.
//
//go:noinline
func Narrow(a int8, b uint16, c int32, d bool, e float32) int {
	r := Leaf(int(a)+int(b)+int(c), int(e))
	if d {
		r++
	}
	return r
}

// Floats takes and returns floating-point values.
//
//go:noinline
func Floats(x, y float64, n int) float64 {
	if n > 0 {
		return Floats(x, y, n-1) + x*y
	}
	return x - y
}

// Node is a heap object whose only reference may be an argument register.
type Node struct {
	A int
	B []int
	C string
}

var ErrBad = errors.New("target: corrupted node")

// Check returns its argument after checking it: the caller made it fresh.
//
//go:noinline
func Check(x *Node) (*Node, error) {
	if x == nil || x.A != len(x.B)*3 || x.C != "node" {
		return nil, ErrBad
	}
	Leaf(x.A, 1)
	return x, nil
}

// Sum takes a slice.
//
//go:noinline
func Sum(s []int, scale int) int {
	t := 0
	for _, v := range s {
		t += v * scale
	}
	return t + Leaf(0, 0)
}

// Apply calls a closure; the closure it is given is probed too (its context register
// is live at its entry).
//
//go:noinline
func Apply(f func(int) int, k int) int { return f(k) }

// Deep recurses n times with a frame of its own, growing the stack.
//
//go:noinline
func Deep(n int, s string) int {
	var pad [32]int
	pad[n%32] = n
	if n == 0 {
		return len(s)
	}
	return Deep(n-1, s) + pad[n%32] - n
}

// Panicky panics when n is a multiple of 7.
//
//go:noinline
func Panicky(n int) int {
	if n%7 == 0 {
		panic(ErrBad)
	}
	return Leaf(n, 1)
}

// Adder returns a closure whose context is live at its entry.
//
//go:noinline
func Adder(x int) func(int) int {
	return func(k int) int { return k + x + Leaf(k, x) }
}

// Wait blocks inside the function until ch gives a value.
//
//go:noinline
func Wait(ch chan int, add int) int { return <-ch + add + Leaf(0, 0) }

// Huge has a frame of 4 KiB and more: arm64 allocates and releases it through R27
// (MOVD $N, R27; ADD R27, RSP, RSP), amd64 with an imm32.
//
//go:noinline
func Huge(x int) int {
	var buf [1 << 10]int
	buf[x&1023] = x
	return buf[(x*7)&1023] + Leaf(x, 1)
}
