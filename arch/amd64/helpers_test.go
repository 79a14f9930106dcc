package amd64

import (
	"slices"
	"sort"
)

// index returns the index of the instruction that starts exactly at pc.
func index(insts []xinst, pc uint64) (int, bool) {
	i := sort.Search(len(insts), func(i int) bool { return insts[i].PC >= pc })
	return i, i < len(insts) && insts[i].PC == pc
}

// targetsOf is what walk's Targets must be for insts, a decoded function: where its
// JMPs and Jccs go, and its CALLs that land inside it, sorted, once each.
func targetsOf(insts []xinst) []uint64 {
	var ts []uint64
	lo, hi := insts[0].PC, insts[len(insts)-1].End()
	for _, in := range insts {
		if t := in.Target; t != 0 && (isJump(in.Op) || lo <= t && t < hi) {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}
