// Package store has functions of every shape of signature the tests of funcsig read.
package store

import (
	"errors"
	"fmt"
)

type DB struct{ n int }

type Small struct {
	A int32
	B float64
	C bool
}

// Big has ten words: more than amd64's nine integer registers.
type Big struct{ A, B, C, D, E, F, G, H, I, J int }

type Pair struct {
	X [1]int
	Y [0]int
	Z float32
}

//go:noinline
func (d *DB) Get(key string) ([]byte, error) {
	touch()
	if d.n > len(key) {
		return nil, errors.New("short")
	}
	return []byte(key), nil
}

//go:noinline
func (d DB) Len(extra uint16) int { touch(); return d.n + int(extra) }

//go:noinline
func Narrow(a int8, b int16, c int32, d int64, e uint, f uint8) int32 {
	touch()
	return int32(a) + int32(b) + c + int32(d) + int32(e) + int32(f)
}

//go:noinline
func Floats(a float32, b float64, n int) (float64, float32) {
	touch()
	return float64(a) + b, float32(n)
}

//go:noinline
func Flag(b bool, s string) bool { touch(); return b && s != "" }

//go:noinline
func Bytes(b []byte, p *int) []byte { touch(); return append(b, byte(*p)) }

//go:noinline
func Ifaces(x any, e error, s fmt.Stringer) (any, error) {
	touch()
	if s != nil {
		return x, e
	}
	return nil, e
}

//go:noinline
func Structs(s Small, b Big, p *Big) (r Small, err error) {
	touch()
	r = s
	r.A += int32(b.J + p.A)
	return r, nil
}

//go:noinline
func Arrays(a [1]int, b [2]int, c int) int { touch(); return a[0] + b[1] + c }

//go:noinline
func Mixed(p Pair, c complex128, u uintptr) (Pair, complex128) {
	touch()
	p.X[0] += int(u)
	return p, c * 2
}

//go:noinline
func Div(a, b int) (q, r int) {
	touch()
	q, r = a/b, a%b
	return
}

// Spill runs out of integer registers on amd64 at s, which goes to the stack and
// gives back the one register it took: z takes it.
//
//go:noinline
func Spill(a, b, c, d, e, f, g, h int, s string, z int) int {
	touch()
	return a + b + c + d + e + f + g + h + len(s) + z
}

// ManyFloats runs out of amd64's 15 floating-point registers at p.
//
//go:noinline
func ManyFloats(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p float64, q int) float64 {
	touch()
	return a + b + c + d + e + f + g + h + i + j + k + l + m + n + o + p + float64(q)
}

//go:noinline
func MakeAdder(n int) func(int, string) int {
	touch()
	return func(a int, s string) int { touch(); return a + len(s) + n }
}

//go:noinline
func Call(f func() error, m map[string]int, ch chan int) int {
	touch()
	if f() != nil {
		return len(m) + len(ch)
	}
	return 0
}

// touch makes each function above call one: a function that calls none may have no
// stack check, hence no morestack block to hold its signature against.
//
//go:noinline
func touch() {}

type Number interface{ ~int | ~float64 }

// Sum is compiled once for each GC shape, with a dictionary before its parameters.
//
//go:noinline
func Sum[T Number](xs []T, scale T) T {
	touch()
	var s T
	for _, x := range xs {
		s += x * scale
	}
	return s
}

type Box[T any] struct{ v T }

// Put's dictionary comes after its receiver.
//
//go:noinline
func (b *Box[T]) Put(v T, n int) int {
	touch()
	b.v = v
	return n
}

// Each's closure reaches the dictionary through its context, not a parameter.
//
//go:noinline
func Each[T any](xs []T, f func(T)) func(int) int {
	touch()
	return func(i int) int { touch(); f(xs[i]); return i }
}
