// Package store is what sdtctl's run-time function probe tests put probes on: a
// package nobody instrumented, with arguments and results of the common kinds.
package store

import (
	"errors"
	"time"
)

// DB is a map behind methods.
type DB struct{ m map[string]string }

// New returns a DB holding kv's pairs.
func New(kv ...string) *DB {
	db := &DB{m: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		db.m[kv[i]] = kv[i+1]
	}
	return db
}

// ErrNotFound is Get's error for a key it does not hold.
var ErrNotFound = errors.New("not found")

// Get returns key's value.
//
//go:noinline
func (db *DB) Get(key string) (string, error) {
	v, ok := db.m[key]
	if !ok {
		return "", ErrNotFound
	}
	return v, nil
}

// Count is how many keys db holds: small enough to be inlined into every caller.
func Count(db *DB) int { return len(db.m) }

// Sleep sleeps ms milliseconds and returns ms.
//
//go:noinline
func Sleep(ms int) int {
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return ms
}

// Mix takes one argument of each common kind.
//
//go:noinline
func Mix(a int64, b int8, f float64, ok bool, s string) int64 {
	if ok {
		return a + int64(b) + int64(f) + int64(len(s))
	}
	return a
}

// Peek reads through p: a frameless leaf whose first instruction is a load into its
// argument's register, which no run-time probe takes (too short for a jump on amd64;
// on arm64 it may fault, so runs in place, and a probe after it would see no
// argument: it returns at once).
//
//go:noinline
func Peek(p *int) int { return *p }

// MayPanic panics when i is a multiple of 3.
//
//go:noinline
func MayPanic(i int) int {
	if i%3 == 0 {
		panic("a multiple of 3")
	}
	return i
}

// Run calls f. With no argument to pass, its frame is the saved frame pointer alone:
// on amd64 it ends POPQ BP; RET, too short for a return probe's call, so its return
// takes a probe only by a punned jump, where the bytes after its RET allow one.
//
//go:noinline
func Run(f func()) { f() }

// Forever calls f for ever: it never returns, so its entry takes a probe and its
// return none, on every architecture.
//
//go:noinline
func Forever(f func()) {
	for {
		f()
	}
}
