package sled

import (
	"fmt"

	"github.com/gosdt/gosdt/arch"
)

// walked is one function walked from its entry, or why it could not be.
type walked struct {
	entry uint64
	w     *arch.Walked // in the prover's cache: valid until the next walk
	err   error
}

// funcs walks the function around a candidate, once for all the candidates it holds:
// a worker proves candidates in address order, so they come function by function, and
// only the function walked last is kept (its walk lives in the worker's cache). One
// goroutine only.
type funcs struct {
	a    *arch.Arch
	mem  arch.Memory
	syms Symbols
	last walked
}

// at returns the walked function that contains addr.
func (c *funcs) at(addr uint64) *walked {
	if l := &c.last; l.w != nil && l.err == nil && l.w.Entry <= addr && addr < l.w.End {
		return l
	}
	entry, end := c.syms.Func(addr)
	if entry == 0 {
		return &walked{err: fmt.Errorf("no function contains %#x", addr)}
	}
	if c.last.entry == entry {
		return &c.last // walked already, with an error
	}
	c.last = walked{entry: entry}
	c.last.w, c.last.err = c.a.Walk(c.mem, entry, end)
	if c.last.err == nil && c.last.w.End <= c.last.w.Entry {
		c.last.err = fmt.Errorf("function at %#x decodes to nothing", entry)
	}
	return &c.last
}
