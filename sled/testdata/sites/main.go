// Command sites holds probe sites in the places the compiler can put them: plain
// functions, guards, generic functions and methods, closures, deferred closures,
// methods, latency probes and sites inlined from another package. sled's tests build
// it with several flags and compare the sites a search of all its text finds with the
// functions start-up discovery would search.
package main

import (
	"fmt"
	"os"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sled/testdata/sites/lib"
)

func main() {
	n := len(os.Args)
	f := func(k int) int {
		sdt.Probe2(&p2, "closure", k)
		return k + 1
	}
	done := make(chan int)
	go func() {
		sdt.Probe1(&p1, n)
		done <- n
	}()
	ints.Put(n)
	strs.Put("x")
	w := &worker{n: n}
	fmt.Println(plain(n), guarded("s"), generic([]int{n, 2}), generic([]int64{3}), f(n), <-done, w.run(), lib.Step(n))
}

// Plain sites of every arity up to three; p1 and p2 fire again in generic code, in a
// closure and in a goroutine.
var (
	p0 = sdt.Define0("sites", "p0")
	p1 = sdt.Define1[int]("sites", "p1", "a")
	p2 = sdt.Define2[string, int]("sites", "p2", "s", "n")
	p3 = sdt.Define3[int, int, int]("sites", "p3", "a", "b", "c")
)

//go:noinline
func plain(n int) int {
	sdt.Probe0(&p0)
	sdt.Probe1(&p1, n)
	p2.Fire("plain", n)
	sdt.Probe3(&p3, n, n+1, n+2)
	return n * 3
}

// g fires behind its Enabled check, which keeps fmt.Sprint off the disabled path.
var g = sdt.Define1[string]("sites", "guard", "s")

//go:noinline
func guarded(s string) int {
	if g.Enabled() {
		g.Fire(fmt.Sprint(s, len(s)))
	}
	return len(s)
}

type number interface{ ~int | ~int64 }

//go:noinline
func generic[T number](xs []T) T {
	var sum T
	for _, x := range xs {
		sum += x
		sdt.Probe1(&p1, int(x))
	}
	return sum
}

// lat times worker.run: its End fires in a deferred closure.
var lat = sdt.DefineLatency1[int]("sites", "lat", "n")

type worker struct{ n int }

//go:noinline
func (w *worker) run() int {
	t := lat.Start()
	defer func() { lat.End(t, w.n) }()
	w.n = lib.Step(w.n)
	return w.n
}

// Generic probes, each fired by package lib's generic method Box.Put.
var (
	ints = lib.Box[int]{P: sdt.Define1[int]("sites", "ints", "v")}
	strs = lib.Box[string]{P: sdt.Define1[string]("sites", "strs", "v")}
)
