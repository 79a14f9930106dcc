package amd64

import (
	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/x86/x86asm"
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
// It refuses a Jcc, RET, indirect jump or call, trap, or undecodable byte. What the
// length decoder knows (peek) is read without x86asm.
func guardedCall(m arch.Memory, start uint64, pass func(target uint64) bool) (arch.Guarded, error) {
	var g arch.Guarded
	pc, jumps := start, 0
	for n := 0; n < guardedMaxInsts; n++ {
		p, ok := peek(m, pc)
		switch {
		case !ok || p.flow != flowNext && p.flow != flowCall && p.flow != flowJmp:
			// Unknown to the length decoder, or a refusal to put in x86asm's words.
		case p.flow == flowCall && pass != nil && pass(p.target):
			pc += uint64(p.n)
			continue
		case p.flow == flowCall:
			g.Call, g.CallPC, g.Return = p.target, pc, pc+uint64(p.n)
			return g, nil
		case p.flow == flowJmp:
			if jumps++; jumps > maxJumps {
				return g, shapeErr(pc, "more than %d jumps before the guarded call", maxJumps)
			}
			pc = p.target
			continue
		default:
			if p.kind == peekLeaRIP {
				g.Receivers = append(g.Receivers, p.lea)
			}
			pc += uint64(p.n)
			continue
		}
		in, err := decode(m, pc)
		if err != nil {
			return g, err
		}
		switch {
		case in.Op == x86asm.LEA:
			if in.Mem != 0 {
				g.Receivers = append(g.Receivers, in.Mem)
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
