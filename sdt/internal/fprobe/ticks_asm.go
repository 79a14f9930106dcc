//go:build amd64 || arm64

package fprobe

// ticks is the CPU's counter, the clock package consume stamps trace records with:
// nosplit assembly, callable from the return handler.
//
//go:noescape
func ticks() uint64

// publish stores v at p with release semantics, for a word only one goroutine (the
// one running on a P) writes: what it wrote before is visible to a reader that loads
// v with acquire.
//
//go:noescape
func publish(p *uint64, v uint64)
