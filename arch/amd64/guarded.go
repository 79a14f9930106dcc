package amd64

import "golang.org/x/arch/x86/x86asm"

// Limits of the straight-line walks in GuardedCall and FlagsDead.
const (
	guardedMaxInsts = 64
	flagsMaxInsts   = 32
	maxJumps        = 4
)

// Guarded is what the straight-line code after a site's check does first.
type Guarded struct {
	Call   uint64   // target of the first CALL not passed over
	CallPC uint64   // address of that CALL
	Return uint64   // pc after that CALL (the fire call's return address)
	Leas   []uint64 // absolute addresses loaded by RIP-relative LEAs on the way
}

// GuardedCall follows the straight-line code from start (following up to 4
// direct JMPs, at most 64 instructions) to the first direct CALL whose target
// pass(target) is false. Calls with pass(target) true (race instrumentation,
// runtime.raceread and friends) are stepped over; pass may be nil. It refuses,
// with a *ShapeError, a Jcc, RET, indirect jump or call, trap, or undecodable
// byte on the way.
func GuardedCall(m Memory, start uint64, pass func(target uint64) bool) (Guarded, error) {
	var g Guarded
	pc, jumps := start, 0
	for n := 0; n < guardedMaxInsts; n++ {
		in, err := Decode(m, pc)
		if err != nil {
			return g, err
		}
		switch {
		case in.Op == x86asm.LEA:
			if in.Mem != 0 {
				g.Leas = append(g.Leas, in.Mem)
			}
		case in.Op == x86asm.CALL:
			if in.Target == 0 {
				return g, shapeErr(in.PC, "indirect call %v before the guarded call", in.Inst)
			}
			if pass != nil && pass(in.Target) {
				break
			}
			g.Call, g.CallPC, g.Return = in.Target, in.PC, in.End()
			return g, nil
		case in.Op == x86asm.JMP:
			if in.Target == 0 {
				return g, shapeErr(in.PC, "indirect jump %v before the guarded call", in.Inst)
			}
			if jumps++; jumps > maxJumps {
				return g, shapeErr(in.PC, "more than %d jumps before the guarded call", maxJumps)
			}
			pc = in.Target
			continue
		case isCondJump(in.Op):
			return g, shapeErr(in.PC, "conditional branch %v before the guarded call", in.Inst)
		case isUncond(in):
			return g, shapeErr(in.PC, "%v before the guarded call", in.Inst)
		}
		pc = in.End()
	}
	return g, shapeErr(start, "no call within %d instructions", guardedMaxInsts)
}
