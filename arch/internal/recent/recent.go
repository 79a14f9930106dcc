// Package recent remembers the instructions decoded for one probe site, by address:
// proving a site decodes some of them more than once (the arch packages' caches).
package recent

// Insts holds up to Max instructions of type I, searched linearly: a site's proof
// decodes a few dozen. The zero value is ready; one goroutine only.
type Insts[I any] struct {
	pcs   []uint64
	insts []I
}

// Max bounds what Insts holds: past it, Put forgets nothing and remembers nothing new.
const Max = 128

// Get returns the instruction remembered at pc.
func (r *Insts[I]) Get(pc uint64) (in I, ok bool) {
	for i, p := range r.pcs {
		if p == pc {
			return r.insts[i], true
		}
	}
	return in, false
}

// Put remembers in at pc.
func (r *Insts[I]) Put(pc uint64, in I) {
	if len(r.pcs) < Max {
		r.pcs, r.insts = append(r.pcs, pc), append(r.insts, in)
	}
}

// Reset forgets every instruction, keeping the memory for the next ones.
func (r *Insts[I]) Reset() { r.pcs, r.insts = r.pcs[:0], r.insts[:0] }
