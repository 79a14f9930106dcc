package amd64

import (
	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/arch/internal/recent"
)

// cache is the Memory of one goroutine of discovery (Arch.NewCache). Proving one site
// decodes some instructions several times (the check's Jcc when the check is followed
// and when it is matched, the fire block when its call is found and when flags are
// proven dead in it); through a cache x86asm decodes each once. It holds the
// instructions of one site at a time (Reset between sites), a few dozen, in a slice
// searched linearly, and the walker's scratch memory. One goroutine only.
type cache struct {
	arch.Memory
	insts  recent.Insts[xinst]
	walker walker
}

func newCache(m arch.Memory) arch.Cache { return &cache{Memory: m} }

// decode is decode through the cache.
func (c *cache) decode(pc uint64) (xinst, error) {
	if in, ok := c.insts.Get(pc); ok {
		return in, nil
	}
	b := c.Read(pc, maxInstLen)
	if len(b) == 0 {
		return xinst{}, shapeErr(pc, "no code mapped")
	}
	in, err := decodeBytes(b, pc)
	if err == nil {
		c.insts.Put(pc, in)
	}
	return in, err
}

// Reset forgets every instruction, keeping the memory for the next ones.
func (c *cache) Reset() { c.insts.Reset() }
