package arm64

import (
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
)

// abiRegs is how many integer argument registers Go's ABIInternal has on arm64:
// R0 up to R15, in order.
const abiRegs = 16

// Arch is AArch64 as discovery uses it.
var Arch = arch.Arch{
	Name:        "arm64",
	Machine:     183, // EM_AARCH64
	Candidates:  candidates,
	NewCache:    newCache,
	Follow:      follow,
	GuardedCall: guardedCall,
	Walk:        walk,
	Match:       match,
	Seal:        seal,
	Jumps:       jumps,
	Sealed:      sealed,
	Rejoins:     rejoins,
}

// FuncProbes is AArch64 as function probes read its functions (funcprobe.go).
var FuncProbes = arch.FuncProbes{Arch: &Arch, FuncEntry: funcEntry, FuncReturns: funcReturns, LeafEntry: leafEntry, RetJump: retJump, CallTo: callTo}

// callTo is CallTo as arch.Arch's: a BL is one instruction, n must be 4.
func callTo(pc, target uint64, n int) []byte {
	if n != 4 {
		return nil
	}
	return CallTo(pc, target)
}

// Offline is AArch64 as reading its binaries uses it: the argument registers are
// R0..R15, which USDT argument specs name x0..x15.
var Offline = arch.Offline{
	Arch:       &Arch,
	ArgRegs:    []string{"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15"},
	CallBefore: callBefore,
	Calls:      calls,
}

// cache is the Memory of one goroutine of discovery (Arch.NewCache): the words decoded
// for one site (follow, the guarded call and the liveness walks read many of them more
// than once), direct-mapped by pc, and the walker's memory.
type cache struct {
	arch.Memory
	gen    uint32 // the site's generation: entries of another are stale
	insts  [256]decoded
	seen   []uint64 // regDead's pcs
	walker walker
}

// decoded is an instruction decoded for the site of generation gen.
type decoded struct {
	gen uint32
	in  inst
}

func newCache(m arch.Memory) arch.Cache { return &cache{Memory: m, gen: 1} }

// Reset forgets the decoded words, keeping the memory for the next site's.
func (c *cache) Reset() {
	if c.gen++; c.gen == 0 { // wrapped: entries of generation 1 and up could look fresh
		clear(c.insts[:])
		c.gen = 1
	}
}

// callBefore reads the BL that ends at ret (Offline.CallBefore).
func callBefore(m arch.Memory, ret uint64) (pc, target uint64, err error) {
	b := m.Read(ret-instLen, instLen)
	if len(b) < instLen {
		return 0, 0, shapeErr(ret, "no code mapped before the return address")
	}
	kind, to := raw(binary.LittleEndian.Uint32(b), ret-instLen)
	if kind != rawBL {
		return 0, 0, shapeErr(ret, "no BL before the return address")
	}
	return ret - instLen, to, nil
}

// shapeErr is not inlined: inlined at each of the decoder's and the matchers' many
// refusals, it made every program that imports sdt kilobytes larger, for calls made
// only when a candidate is refused.
//
//go:noinline
func shapeErr(pc uint64, format string, args ...any) error {
	return arch.Errorf("arm64", pc, format, args...)
}
