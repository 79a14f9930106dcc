// Package goid reads goroutine ids, which Go does not export: the running
// goroutine's runtime descriptor (its g) and where in a g the id is.
package goid

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"

	"github.com/gosdt/gosdt/internal/goversion"
	"github.com/gosdt/gosdt/internal/rawptr"
)

// runtime.Stack prints a goroutine's id, at a cost of microseconds; the id is one
// word of its g, at an offset that depends on the Go version. Rather than a table of
// versions, the offset is found once, by asking goroutines their id through
// runtime.Stack and looking for it in their own g. A runtime in which no single
// offset holds the id of all of them leaves events without one (0), rather than
// with a wrong one.

// Offset is the offset of the goroutine id in the runtime's g; 0 if it cannot be
// found, or G is not written for this architecture.
var Offset = sync.OnceValue(findOffset)

// At is the id of the goroutine whose g is g, off its Offset (not 0): g is a live
// descriptor (the running goroutine's, as G or a stub returned it).
//
//go:nosplit
func At(g, off uintptr) uint64 {
	return *(*uint64)(rawptr.At(g + off))
}

// gScan is how far into a g the id is looked for: the runtime's g is about 400
// bytes, its id well inside.
const gScan = 384

func findOffset() uintptr {
	if goversion.CheckRunning(goversion.G) != nil {
		return 0 // a g not read: events carry no goroutine id
	}
	var cands map[uintptr]bool
	for range 3 {
		ch := make(chan []uintptr)
		go func() { ch <- ownOffsets() }()
		offs := <-ch
		next := map[uintptr]bool{}
		for _, o := range offs {
			if cands == nil || cands[o] {
				next[o] = true
			}
		}
		cands = next
	}
	if len(cands) != 1 {
		return 0
	}
	for o := range cands {
		return o
	}
	return 0
}

// ownOffsets returns the offsets in the calling goroutine's g that hold its id.
func ownOffsets() []uintptr {
	g := G()
	id := Own()
	if g == 0 || id == 0 {
		return nil
	}
	var offs []uintptr
	for off := uintptr(16); off < gScan; off += 8 { // past the stack bounds
		if At(g, off) == id {
			offs = append(offs, off)
		}
	}
	return offs
}

// Own is the calling goroutine's id, parsed from its stack trace's header
// ("goroutine 18 [running]:"), slowly; 0 if it cannot be read.
func Own() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b, ok := bytes.CutPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); ok && i > 0 {
		if id, err := strconv.ParseUint(string(b[:i]), 10, 64); err == nil {
			return id
		}
	}
	return 0
}
