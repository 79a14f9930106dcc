// Package lib has hand-written probes inside functions that rules also instrument
// (mix.rules): each such probe has a site in the function and one in its traced copy,
// and both are named after the function, whatever is enabled.
package lib

import (
	"example.com/fbtex/probes"
	"github.com/gosdt/gosdt/sdt"
)

var (
	served  = sdt.Define1[int]("mix", "served", "n")
	handled = sdt.DefineLatency("mix", "handle")
)

// Serve fires served, steps (defined in another package) and, in a closure, served
// again; it is timed by a latency probe.
func Serve(n int) int {
	t := handled.Start()
	sdt.Probe1(&served, n)
	r := 0
	for i := range n {
		probes.Step.Fire(i)
		r += i
	}
	func() {
		sdt.Probe1(&served, -n)
	}()
	handled.End(t)
	return r
}

// Server has a method with a probe.
type Server struct{ calls int }

func (s *Server) Handle(n int) {
	s.calls++
	sdt.Probe1(&served, n)
}

// Each is generic.
func Each[T any](xs []T, f func(T)) {
	for _, x := range xs {
		sdt.Probe1(&served, 1)
		f(x)
	}
}
