package amd64

import (
	"github.com/gosdt/gosdt/arch"
)

// cache is the Memory of one goroutine of discovery (Arch.NewCache): it holds the
// walker's scratch memory, so that walking function after function allocates nothing.
// Instructions are not remembered: the decoder reads one in less time than a search
// of the ones a site's proof decoded would take. One goroutine only.
type cache struct {
	arch.Memory
	walker walker
}

func newCache(m arch.Memory) arch.Cache { return &cache{Memory: m} }

// Reset is called between sites; there is nothing a site leaves behind.
func (c *cache) Reset() {}
