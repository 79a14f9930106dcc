package amd64

import (
	"github.com/gosdt/gosdt/arch"
)

// Limits of the straight-line walks in guardedCall and flagsDead.
const (
	guardedMaxInsts = 64
	flagsMaxInsts   = 32
	maxJumps        = 4
)

// guardedCall follows the straight-line code from start (Arch.GuardedCall), up to 4
// direct JMPs and 64 instructions, to the first direct CALL whose target pass(target)
// is false; calls that pass (race instrumentation, runtime.raceread and friends) are
// stepped over. The receivers are the addresses of every RIP-relative LEA on the way.
// It refuses a Jcc, RET, indirect jump or call, trap, or an instruction the decoder
// does not know.
func guardedCall(m arch.Memory, start uint64, pass func(target uint64) bool) (arch.Guarded, error) {
	var g arch.Guarded
	pc, jumps := start, 0
	for n := 0; n < guardedMaxInsts; n++ {
		in, err := decodeAt(m, pc)
		if err != nil {
			return g, err
		}
		switch in.flow {
		case flowCall:
			if t := in.target(pc); pass == nil || !pass(t) {
				g.Call, g.CallPC, g.Return = t, pc, pc+uint64(in.n)
				return g, nil
			}
		case flowJmp:
			if jumps++; jumps > maxJumps {
				return g, shapeErr(pc, "more than %d jumps before the guarded call", maxJumps)
			}
			pc = in.target(pc)
			continue
		case flowCallInd:
			return g, shapeErr(pc, "indirect call %v before the guarded call", in.text(m, pc))
		case flowJmpInd:
			return g, shapeErr(pc, "indirect jump %v before the guarded call", in.text(m, pc))
		case flowJcc:
			return g, shapeErr(pc, "conditional branch %v before the guarded call", in.text(m, pc))
		case flowRet, flowTrap:
			return g, shapeErr(pc, "%v before the guarded call", in.text(m, pc))
		default:
			if in.legacy(mapOne, 0x8D) && in.rip {
				g.Receivers = append(g.Receivers, in.mem(pc))
			}
		}
		pc += uint64(in.n)
	}
	return g, shapeErr(start, "no call within %d instructions", guardedMaxInsts)
}
