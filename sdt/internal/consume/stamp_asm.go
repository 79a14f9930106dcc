//go:build amd64 || arm64

package consume

// stamp returns the time in ticks of the CPU's counter and the running goroutine's
// runtime g: what a trace record is stamped with (package goid reads the id from g).
//
//go:noescape
func stamp() (ticks uint64, gp uintptr)

// publish stores v at p with release semantics: a per-P buffer's end, after the
// record's bytes.
//
//go:noescape
func publish(p *uint64, v uint64)
