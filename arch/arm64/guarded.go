package arm64

import (
	"github.com/gosdt/gosdt/arch"
)

// Limit of the straight-line walk in guardedCall.
const guardedMaxInsts = 64

// guardedCall follows the straight-line code from start (Arch.GuardedCall), up to 4
// direct Bs and 64 instructions, to the first BL whose target pass(target) is false;
// BLs that pass (race instrumentation) are stepped over. On the way it tracks the
// addresses ADRP and ADD #imm put in registers: the receiver is X0's at the BL. It
// refuses a conditional branch, RET, indirect branch or call, trap, or a word the
// decoder does not know.
func guardedCall(m arch.Memory, start uint64, pass func(target uint64) bool) (arch.Guarded, error) {
	var known regValues // what the code put in registers: addresses, constants
	pc, jumps := start, 0
	for n := 0; n < guardedMaxInsts; n++ {
		in, err := decode(m, pc)
		if err != nil {
			return arch.Guarded{}, err
		}
		switch in.Flow { // the inst is made again for a message, so that in can stay in registers
		case flowBL:
			if pass != nil && pass(in.Target) {
				known.clear() // a call may clobber every allocatable register
				pc += instLen
				continue
			}
			g := arch.Guarded{Call: in.Target, CallPC: pc, Return: pc + instLen}
			if x0, ok := known.get(0); ok {
				g.Receivers = []uint64{x0}
			}
			return g, nil
		case flowB:
			if jumps++; jumps > maxJumps {
				return arch.Guarded{}, shapeErr(pc, "more than %d jumps before the guarded call", maxJumps)
			}
			pc = in.Target
			continue
		case flowCond:
			return arch.Guarded{}, shapeErr(pc, "conditional branch %v before the guarded call", decodeWord(in.Word, pc))
		case flowBR, flowRET, flowTrap, flowBLR:
			return arch.Guarded{}, shapeErr(pc, "%v before the guarded call", decodeWord(in.Word, pc))
		}
		track(in, &known)
		pc += instLen
	}
	return arch.Guarded{}, shapeErr(start, "no call within %d instructions", guardedMaxInsts)
}
