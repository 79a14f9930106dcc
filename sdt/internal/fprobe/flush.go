package fprobe

// Unwritten reports whether one of f's return rings has the next event to read with
// its slot taken and not yet written (a return handler between the two, on another
// thread): ReadReturns stops at it, and a reader that must take every return made
// before it (a flush) waits for it to be written.
func (f *Func) Unwritten() bool {
	f.reading.Lock()
	defer f.reading.Unlock()
	for i := range f.pp {
		if r := f.ringOf(i); r != nil && r.unwritten() {
			return true
		}
	}
	return f.shared != nil && f.shared.unwritten()
}

//go:norace
func (r *ring) unwritten() bool {
	t := load64(&r.tail)
	return load64(&r.head) != t && load64(&r.seq[t%ringSize]) != t+1
}
