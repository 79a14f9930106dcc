package amd64

// Cache is a Memory that remembers the instructions Decode decoded from it. Proving one
// site decodes some instructions several times (the check's Jcc when the check is read
// and when it is matched, the fire block when its call is found and when flags are
// proven dead in it); with a Cache each is decoded by x86asm once. It holds the
// instructions of one site at a time (Reset between sites), a few dozen, in a slice
// searched linearly. It is not safe for concurrent use: give each goroutine its own.
type Cache struct {
	Memory
	insts []Inst
}

// NewCache returns a Cache over m.
func NewCache(m Memory) *Cache { return &Cache{Memory: m} }

// maxCached bounds the cache: past it, Decode decodes without remembering.
const maxCached = 128

// decode is Decode through the cache.
func (c *Cache) decode(pc uint64) (Inst, error) {
	for i := range c.insts {
		if c.insts[i].PC == pc {
			return c.insts[i], nil
		}
	}
	b := c.Read(pc, MaxInstLen)
	if len(b) == 0 {
		return Inst{}, shapeErr(pc, "no code mapped")
	}
	in, err := decodeBytes(b, pc)
	if err == nil && len(c.insts) < maxCached {
		c.insts = append(c.insts, in)
	}
	return in, err
}

// Reset forgets every instruction, keeping the memory for the next ones.
func (c *Cache) Reset() { c.insts = c.insts[:0] }
