package control

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
)

// Go gives no goroutine id, and runtime.Stack, which prints it, costs microseconds.
// stamp returns the running goroutine's g (the runtime's descriptor); the id is one
// word of it, at an offset that depends on the Go version. Rather than a table of
// versions, the offset is found once, by asking goroutines their id through
// runtime.Stack and looking for it in their own g. A runtime in which no single
// offset holds the id of all of them leaves events without one (0), rather than
// with a wrong one.

var goidAt = sync.OnceValue(findGoidOffset)

// gScan is how far into a g the id is looked for: the runtime's g is about 400
// bytes, its id well inside.
const gScan = 384

// findGoidOffset returns the offset of the goroutine id in the runtime's g, 0 if it
// cannot be found.
func findGoidOffset() uintptr {
	var cands map[uintptr]bool
	for range 3 {
		ch := make(chan []uintptr)
		go func() { ch <- ownGoidOffsets() }()
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

// ownGoidOffsets returns the offsets in the calling goroutine's g that hold its id.
func ownGoidOffsets() []uintptr {
	_, g := stamp()
	id := ownGoid()
	if g == 0 || id == 0 {
		return nil
	}
	var offs []uintptr
	for off := uintptr(16); off < gScan; off += 8 { // past the stack bounds
		if gWord(g, off) == id {
			offs = append(offs, off)
		}
	}
	return offs
}

// ownGoid parses the calling goroutine's id from its stack trace's header,
// "goroutine 18 [running]:".
func ownGoid() uint64 {
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
