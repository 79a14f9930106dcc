package fprobe

// Unwritten reports whether the next of f's return events to read has its slot taken
// and is not yet written (a return handler between the two, on another thread):
// ReadReturns stops there, and a reader that must take every return made before it
// (a flush) waits for it to be written.
//
//go:norace
func (f *Func) Unwritten() bool {
	r := f.ring
	if r == nil {
		return false
	}
	t := load64(&r.tail)
	return load64(&r.head) != t && load64(&r.seq[t%ringSize]) != t+1
}
