package sled

import (
	"fmt"
	"sort"

	"github.com/gosdt/gosdt/arch"
)

// walked is one function walked from its entry, or why it could not be.
type walked struct {
	w   *arch.Walked
	err error
}

// funcs walks each function once, for all the candidates it holds: a large function
// holds many. One goroutine only.
type funcs struct {
	a       *arch.Arch
	mem     arch.Memory
	syms    Symbols
	byEntry map[uint64]*walked
	sorted  []*walked // the walked ones, by entry
}

// at returns the walked function that contains addr.
func (c *funcs) at(addr uint64) *walked {
	// A function already walked may hold addr: large functions hold many candidates.
	i := sort.Search(len(c.sorted), func(i int) bool { return c.sorted[i].w.End > addr })
	if i < len(c.sorted) && c.sorted[i].w.Entry <= addr {
		return c.sorted[i]
	}
	entry, end := c.syms.Func(addr)
	if entry == 0 {
		return &walked{err: fmt.Errorf("no function contains %#x", addr)}
	}
	if d, ok := c.byEntry[entry]; ok {
		return d
	}
	d := &walked{}
	d.w, d.err = c.a.Walk(c.mem, entry, end)
	if d.err == nil && d.w.End <= d.w.Entry {
		d.err = fmt.Errorf("function at %#x decodes to nothing", entry)
	}
	if c.byEntry == nil {
		c.byEntry = map[uint64]*walked{}
	}
	c.byEntry[entry] = d
	if d.err == nil {
		// Extents of distinct functions do not overlap: insert in order.
		j := sort.Search(len(c.sorted), func(j int) bool { return c.sorted[j].w.Entry >= d.w.Entry })
		c.sorted = append(c.sorted, nil)
		copy(c.sorted[j+1:], c.sorted[j:])
		c.sorted[j] = d
	}
	return d
}
