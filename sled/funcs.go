package sled

import (
	"fmt"
	"sort"
)

// decoded is one function, walked or decoded from its entry: what the arch matcher
// needs of it (W), and the instructions' extent.
type decoded[W any] struct {
	w      W
	lo, hi uint64
	err    error
}

// funcs decodes each function once, for all the candidates it holds. The arch files
// give it their decoder.
type funcs[W any] struct {
	syms    symbols
	byEntry map[uintptr]*decoded[W]
	sorted  []*decoded[W] // the decoded ones, by lo
	decode  func(entry uint64, inFunc func(pc uint64) bool) (w W, lo, hi uint64, err error)
}

// at returns the decoded function that contains addr.
func (c *funcs[I]) at(addr uintptr) *decoded[I] {
	// A function already decoded may hold addr: large functions hold many candidates.
	// Asking FuncForPC instead would scan the function's inline tables from its start
	// for every one of them.
	a := uint64(addr)
	i := sort.Search(len(c.sorted), func(i int) bool { return c.sorted[i].hi > a })
	if i < len(c.sorted) && c.sorted[i].lo <= a {
		return c.sorted[i]
	}
	entry := c.syms.entry(addr)
	if entry == 0 {
		return &decoded[I]{err: fmt.Errorf("no function contains %#x", addr)}
	}
	if d, ok := c.byEntry[entry]; ok {
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
	d.w, d.lo, d.hi, d.err = c.decode(uint64(entry), inFunc)
	if d.err == nil && d.hi <= d.lo {
		d.err = fmt.Errorf("function at %#x decodes to nothing", entry)
	}
	if c.byEntry == nil {
		c.byEntry = map[uintptr]*decoded[I]{}
	}
	c.byEntry[entry] = d
	if d.err == nil {
		// Extents of distinct functions do not overlap: insert in order.
		j := sort.Search(len(c.sorted), func(j int) bool { return c.sorted[j].lo >= d.lo })
		c.sorted = append(c.sorted, nil)
		copy(c.sorted[j+1:], c.sorted[j:])
		c.sorted[j] = d
	}
	return d
}
