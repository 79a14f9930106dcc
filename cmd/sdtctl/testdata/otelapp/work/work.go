// Package work is the loop app.Spin runs: not instrumented (the rules name package app
// only), so that its machine code is the same whether Spin's probes are on or off.
package work

// Loop is about n iterations of arithmetic.
//
//go:noinline
func Loop(n int) int {
	x := 0
	for i := range n {
		x += i * i
	}
	return x
}
