package amd64

// Cache is a Memory that remembers the instructions Decode decoded from it. Proving one
// site decodes some instructions several times (the check's Jcc when the check is read
// and when it is matched, the fire block when its call is found and when flags are
// proven dead in it); with a Cache each is decoded by x86asm once. It is not safe for
// concurrent use: give each goroutine its own.
type Cache struct {
	Memory
	insts map[uint64]Inst
}

// NewCache returns a Cache over m.
func NewCache(m Memory) *Cache { return &Cache{Memory: m, insts: map[uint64]Inst{}} }

// decode is Decode through the cache.
func (c *Cache) decode(pc uint64) (Inst, error) {
	if in, ok := c.insts[pc]; ok {
		return in, nil
	}
	b := c.Read(pc, MaxInstLen)
	if len(b) == 0 {
		return Inst{}, shapeErr(pc, "no code mapped")
	}
	in, err := decodeBytes(b, pc)
	if err == nil {
		c.insts[pc] = in
	}
	return in, err
}

// Reset forgets every instruction, keeping the memory for the next ones.
func (c *Cache) Reset() { clear(c.insts) }
