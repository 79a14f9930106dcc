package amd64

import (
	"os"
	"sort"
	"testing"

	"github.com/gosdt/gosdt/arch/internal/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// index returns the index of the instruction that starts exactly at pc.
func index(insts []inst, pc uint64) (int, bool) {
	i := sort.Search(len(insts), func(i int) bool { return insts[i].PC >= pc })
	return i, i < len(insts) && insts[i].PC == pc
}

// branchTargets returns every direct branch target in insts, a decoded function: those
// of JMP and Jcc, and of CALLs that land inside it. walk's Targets must be these.
func branchTargets(insts []inst) map[uint64]bool {
	t := make(map[uint64]bool)
	if len(insts) == 0 {
		return t
	}
	lo, hi := insts[0].PC, insts[len(insts)-1].End()
	for _, in := range insts {
		if in.Target != 0 && (isJump(in.Op) || in.Target >= lo && in.Target < hi) {
			t[in.Target] = true
		}
	}
	return t
}
