package sled

import "fmt"

// decoded is one function, decoded from its entry, with its branch targets.
type decoded[I any] struct {
	insts   []I
	targets map[uint64]bool
	lo, hi  uint64 // the instructions' extent
	err     error
}

// funcs decodes each function once, for all the candidates it holds. The arch files
// give it their decoder.
type funcs[I any] struct {
	syms    symbols
	m       map[uintptr]*decoded[I]
	decode  func(entry uint64, inFunc func(pc uint64) bool) ([]I, error)
	targets func([]I) map[uint64]bool
	extent  func([]I) (lo, hi uint64)
}

// at returns the decoded function that contains addr.
func (c *funcs[I]) at(addr uintptr) *decoded[I] {
	// A function already decoded may hold addr: candidates come in address order and
	// large functions hold many. Asking FuncForPC instead would scan the function's
	// inline tables from its start for every one of them.
	for _, d := range c.m {
		if d.err == nil && uint64(addr) >= d.lo && uint64(addr) < d.hi {
			return d
		}
	}
	entry := c.syms.entry(addr)
	if entry == 0 {
		return &decoded[I]{err: fmt.Errorf("no function contains %#x", addr)}
	}
	if d, ok := c.m[entry]; ok {
		return d
	}
	inFunc := func(pc uint64) bool {
		// The linker starts every function on a 16-byte boundary (32 for Go code on
		// amd64): elsewhere the code after a jump is still this function's, without
		// asking FuncForPC, which made discovery quadratic in a function's size.
		if pc%16 != 0 {
			return true
		}
		return c.syms.entry(uintptr(pc)) == entry
	}
	d := &decoded[I]{}
	d.insts, d.err = c.decode(uint64(entry), inFunc)
	if d.err == nil && len(d.insts) == 0 {
		d.err = fmt.Errorf("function at %#x decodes to nothing", entry)
	}
	if d.err == nil {
		d.targets = c.targets(d.insts)
		d.lo, d.hi = c.extent(d.insts)
	}
	if c.m == nil {
		c.m = map[uintptr]*decoded[I]{}
	}
	c.m[entry] = d
	return d
}
