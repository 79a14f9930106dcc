package amd64

import (
	"github.com/gosdt/gosdt/arch"
)

// peeked is what the walks that prove a site (follow, guardedCall, flagsDead) need of
// an instruction that the decoder knows: its extent and flow, and whether it is one
// of the few kinds those walks step over. Most of a fire block is spills, LEAs and the
// call, all of them here; anything else the walks decode with x86asm.
// TestLengthAgreesWithX86asm checks every classification against x86asm.
type peeked struct {
	n      int
	flow   flowKind
	target uint64 // a direct branch's or call's
	kind   peekKind
	lea    uint64 // kind leaRIP: the address it loads
}

type peekKind uint8

const (
	peekOther  peekKind = iota // not one of the below: ask x86asm
	peekNOP                    // 90, 66 90, 0F 1F /0
	peekMove                   // MOV r/m, r; MOV r, r/m; MOV r/m, imm; MOV r, imm; LEA: flags untouched
	peekLeaRIP                 // LEA of a RIP-relative address (a move too)
	peekJE                     // 74 rel8, 0F 84 rel32
	peekJNE                    // 75 rel8, 0F 85 rel32
)

// peek reads the instruction at pc with the decoder; false if it does not know it
// (the caller decodes it with x86asm).
func peek(m arch.Memory, pc uint64) (peeked, bool) {
	var in inst
	if !decodeInst(m.Read(pc, maxInstLen), &in) {
		return peeked{}, false
	}
	p := peeked{n: int(in.n), flow: in.flow}
	if in.flow == flowJcc || in.flow == flowJmp || in.flow == flowCall {
		p.target = in.target(pc)
	}
	switch {
	case in.isNOP():
		p.kind = peekNOP
	case in.isJcc(ccE):
		p.kind = peekJE
	case in.isJcc(ccNE):
		p.kind = peekJNE
	case in.legacy(mapOne, 0x8D) && in.rip:
		p.kind = peekLeaRIP
		p.lea = in.mem(pc)
	case in.enc == encLegacy && in.m == mapOne && (in.op >= 0x88 && in.op <= 0x8B || in.op == 0x8D || in.op == 0xC6 || in.op == 0xC7 || in.op >= 0xB0 && in.op <= 0xBF):
		p.kind = peekMove
	}
	return p, true
}

// Condition codes: the low nibble of Jcc, SETcc and CMOVcc.
const (
	ccE  = 0x4
	ccNE = 0x5
)

// legacy reports whether in is the legacy opcode op of map m.
func (in *inst) legacy(m, op uint8) bool { return in.enc == encLegacy && in.m == m && in.op == op }

// isNOP reports whether in is a NOP: 90 (without REX.B, which makes it XCHG, or F3,
// which makes it PAUSE) or 0F 1F /0, with any prefix the decoder accepts.
func (in *inst) isNOP() bool {
	return in.legacy(mapOne, 0x90) && in.rex&1 == 0 && in.pfx&pF3 == 0 || in.legacy(map0F, 0x1F)
}

// isJcc reports whether in is the Jcc (rel8 or rel32) of condition code cc.
func (in *inst) isJcc(cc uint8) bool {
	return in.flow == flowJcc && in.enc == encLegacy && (in.m == mapOne && in.op == 0x70|cc || in.m == map0F && in.op == 0x80|cc)
}
