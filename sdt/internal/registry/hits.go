package registry

import (
	"runtime"
	"sync/atomic"
)

// Per-site hit counts are kept per P: an atomic add on a counter shared by every core
// costs more than the rest of an enabled fire together (and bounces its cache line
// between cores); a plain add on the running P's own counter, with the goroutine
// pinned to that P for the two instructions, does not. Readers sum the shards.

// newHitShards (reg.hitShards) gives each P its own block of counters, padded apart
// so that no two Ps write the same cache line: GOMAXPROCS at init, at least the
// number of CPUs; a P beyond them counts on the site's atomic instead.
func newHitShards(sites int) ([]uint64, int) {
	procs := max(runtime.GOMAXPROCS(0), runtime.NumCPU())
	stride := (sites + 7) &^ 7 // whole cache lines per P
	all := make([]uint64, procs*stride+16)
	return all[8 : 8+procs*stride], stride
}

// hit counts one fire of s on P p, to which the caller is pinned.
func (s *site) hit(p int) {
	if i := p*reg.hitStride + s.index; uint(i) < uint(len(reg.hitShards)) {
		bump(&reg.hitShards[i])
	} else {
		s.hits.Add(1)
	}
}

// bump increments a counter that only the pinned P writes. Readers load it
// atomically; the write is a plain one, hidden from the race detector, which cannot
// know that the P pin makes the writers exclusive.
//
//go:norace
func bump(c *uint64) { *c++ }

// hitCount is s's fires over every P.
func (s *site) hitCount() uint64 {
	n := s.hits.Load()
	for i := s.index; i < len(reg.hitShards); i += reg.hitStride {
		n += atomic.LoadUint64(&reg.hitShards[i])
	}
	return n
}
