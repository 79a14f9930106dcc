package arm64

import "golang.org/x/arch/arm64/arm64asm"

// Limit of the straight-line walk in GuardedCall.
const guardedMaxInsts = 64

// Guarded is what the straight-line code after a site's branch does first.
type Guarded struct {
	Call   uint64 // target of the first BL not passed over
	CallPC uint64 // address of that BL
	Return uint64 // pc after that BL (the fire call's return address)
	R0     uint64 // address materialised in X0 at the BL (ADRP, ADD), 0 if unknown
}

// GuardedCall follows the straight-line code from start (following up to 4 direct Bs,
// at most 64 instructions) to the first BL whose target pass(target) is false. BLs with
// pass(target) true (race instrumentation) are stepped over; pass may be nil. On the way
// it tracks the addresses ADRP and ADD #imm put in registers, so that the BL's receiver
// X0 can be checked. It refuses, with a *ShapeError, a conditional branch, RET, indirect
// branch or call, or undecodable word on the way.
func GuardedCall(m Memory, start uint64, pass func(target uint64) bool) (Guarded, error) {
	known := map[int]uint64{} // register -> address it holds
	pc, jumps := start, 0
	for n := 0; n < guardedMaxInsts; n++ {
		in, err := Decode(m, pc)
		if err != nil {
			return Guarded{}, err
		}
		switch {
		case in.Op == arm64asm.BL:
			if pass != nil && pass(in.Target) {
				clear(known) // a call may clobber every allocatable register
				pc = in.End()
				continue
			}
			return Guarded{Call: in.Target, CallPC: in.PC, Return: in.End(), R0: known[0]}, nil
		case in.Op == arm64asm.B && !isCondBranch(in):
			if jumps++; jumps > maxJumps {
				return Guarded{}, shapeErr(in.PC, "more than %d jumps before the guarded call", maxJumps)
			}
			pc = in.Target
			continue
		case isCondBranch(in):
			return Guarded{}, shapeErr(in.PC, "conditional branch %v before the guarded call", in.Inst)
		case isUncond(in) || in.Op == arm64asm.BLR:
			return Guarded{}, shapeErr(in.PC, "%v before the guarded call", in.Inst)
		}
		track(known, in)
		pc = in.End()
	}
	return Guarded{}, shapeErr(start, "no call within %d instructions", guardedMaxInsts)
}

// track updates the registers known to hold addresses after in.
func track(known map[int]uint64, in Inst) {
	if page, rd, ok := adrp(in.Word, in.PC); ok {
		known[rd] = page
		return
	}
	if rd, rn, imm, ok := addImm(in.Word); ok {
		if v, ok := known[rn]; ok {
			known[rd] = v + imm
			return
		}
	}
	for r := range known {
		if _, writes, ok := regEffect(in, r); writes || !ok {
			delete(known, r)
		}
	}
}
