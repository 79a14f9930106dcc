// Package store is what the fbt tests instrument: it does not import gosdt.
package store

import (
	"errors"
	"sync"
)

// DB is a map with a lock.
type DB struct {
	mu sync.Mutex
	m  map[string]int
}

func New() *DB { return &DB{m: map[string]int{}} }

var ErrMissing = errors.New("missing")

// Get has unnamed results and two returns.
func (db *DB) Get(k string) (int, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	v, ok := db.m[k]
	if !ok {
		return 0, ErrMissing
	}
	return v, nil
}

// Put has no results and no return statement.
func (db *DB) Put(k string, v int) {
	db.mu.Lock()
	db.m[k] = v
	db.mu.Unlock()
}

// Len has a value receiver... of a pointer type's element; it has a named result.
func (db *DB) Len() (n int) {
	db.mu.Lock()
	n = len(db.m)
	db.mu.Unlock()
	return
}

// Pair has a value receiver.
type Pair struct{ A, B int }

func (p Pair) Sum() int { return p.A + p.B }

// Fib recurses.
func Fib(n int) int {
	if n < 2 {
		return n
	}
	return Fib(n-1) + Fib(n-2)
}

// Div returns two values, named, through a bare return, and panics on zero.
func Div(a, b int) (q, r int) {
	q, r = a/b, a%b
	return
}

// Map is generic.
func Map[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

// Stack is a generic type.
type Stack[T any] struct{ xs []T }

func (s *Stack[T]) Push(x T) { s.xs = append(s.xs, x) }

func (s *Stack[T]) Pop() (T, bool) {
	var zero T
	if len(s.xs) == 0 {
		return zero, false
	}
	x := s.xs[len(s.xs)-1]
	s.xs = s.xs[:len(s.xs)-1]
	return x, true
}

// Counter uses a closure, whose own returns are not the function's.
func Counter(n int) int {
	add := func(x int) int { return x + 1 }
	c := 0
	for i := 0; i < n; i++ {
		c = add(c)
	}
	return c
}

// Parallel calls Fib from goroutines.
func Parallel(g, n int) int {
	var wg sync.WaitGroup
	res := make([]int, g)
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = Fib(n)
		}()
	}
	wg.Wait()
	s := 0
	for _, r := range res {
		s += r
	}
	return s
}

// Blank has blank parameters and results.
func Blank(_ int, _ string) (_ int) { return 7 }

// Plain is not matched by the rules.
func Plain() int { return 1 }

// Sum is variadic.
func Sum(xs ...int) (total int) {
	for _, x := range xs {
		total += x
	}
	return total
}

// Zero has an unnamed receiver.
func (Pair) Zero() int { return 0 }

// Shadow returns a named result that an inner variable shadows, and has a label.
func Shadow(n int) (err error) {
	if n > 0 {
		err := errors.New("inner")
		_ = err
		return ErrMissing
	}
loop:
	for i := 0; i < 3; i++ {
		if i == n {
			break loop
		}
	}
	return
}
