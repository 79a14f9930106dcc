// Command funcprobetest holds functions of the shapes function probes meet, for the
// tests of arch/amd64 and arch/arm64: small and large frames, narrow, float, string
// and closure arguments, several returns, a frameless leaf.
package main

import (
	"fmt"
	"os"
)

var sink int

//go:noinline
func leaf(a, b int) int { return a*b + a }

//go:noinline
func small(p *[64]int, s string, n int) int {
	p[0] = n + len(s) + leaf(n, 2)
	return p[0]
}

//go:noinline
func large(p *int, b bool, f float64) (*int, int) {
	var buf [200]int
	buf[leaf(3, 1)] = *p
	if b {
		return nil, 0
	}
	return p, buf[leaf(4, 1)] + int(f)
}

//go:noinline
func narrow(a int8, b uint16, c int32, d bool, e float32) int {
	return leaf(int(a)+int(b)+int(c), int(e)) + map[bool]int{true: 1}[d]
}

// huge has a frame over 4 KiB: amd64 checks it with MOVQ SP, R12; SUBQ; JCS (refused),
// arm64 allocates and releases it through R27.
//
//go:noinline
func huge(x int) int {
	var buf [1 << 10]int
	buf[x&1023] = x
	return buf[(x*7)&1023] + leaf(x, 1)
}

// floats takes two floating-point arguments, which a morestack block spills as a pair.
//
//go:noinline
func floats(x, y float64, n int) float64 {
	if n > 0 {
		return floats(x, y, n-1) + x*y
	}
	return x - y
}

// pairs takes 32-bit integers and floats next to each other, spilled as pairs of W and
// S registers on arm64.
//
//go:noinline
func pairs(p *int, a, b int32, x, y float32) int {
	return leaf(*p+int(a)+int(b), int(x*y))
}

// bigleaf calls nothing but has a frame too large to go without a stack check.
//
//go:noinline
func bigleaf(x int) int {
	var buf [64]int
	for i := range buf {
		buf[i] = x + i
	}
	return buf[x&63] + buf[(x+7)&63]
}

//go:noinline
func callit(f func(int) int, k int) int { return f(k) }

func main() {
	var a [64]int
	x := len(os.Args)
	c := func(k int) int { return k + x + leaf(k, x) }
	fmt.Println(callit(c, 1), small(&a, "hi", 3), narrow(1, 2, 3, true, 1.5), huge(x))
	p, n := large(&x, len(os.Args) > 5, 1.5)
	fmt.Println(p != nil, n, floats(1.5, 2, x), pairs(&x, -3, 4, 1.5, 2), bigleaf(x))
}
