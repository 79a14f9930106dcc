package amd64

import (
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
)

// peeked is what the walks that prove a site (follow, guardedCall, flagsDead) need of
// an instruction that the length decoder knows, read without x86asm: its extent and
// flow, and whether it is one of the few kinds those walks step over. Most of a fire
// block is spills, LEAs and the call, all of them here; anything else the walks
// decode with x86asm, as they do an instruction length does not know.
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

// peek reads the instruction at pc with the length decoder; false if it does not
// know it (the caller decodes it with x86asm).
func peek(m arch.Memory, pc uint64) (peeked, bool) {
	b := m.Read(pc, maxInstLen)
	n, flow, rel, ok := length(b)
	if !ok {
		return peeked{}, false
	}
	p := peeked{n: n, flow: flow}
	if flow == flowJcc || flow == flowJmp || flow == flowCall {
		p.target = pc + uint64(n) + uint64(int64(rel))
	}
	// The prefixes length accepted: 66s, one of F2 and F3, then at most one REX.
	i, rep, rex := 0, false, byte(0)
	for ; b[i] == 0x66 || b[i] == 0xF2 || b[i] == 0xF3; i++ {
		rep = rep || b[i] != 0x66
	}
	if b[i]&0xF0 == 0x40 {
		rex = b[i]
		i++
	}
	op := uint16(b[i])
	if op == 0x0F {
		i++
		op = 0x0F00 | uint16(b[i])
	}
	modrm := i + 1 // where the ModRM byte is, for the opcodes that have one
	switch {
	case op == 0x90 && rex&1 == 0 && !rep, op == 0x0F1F:
		p.kind = peekNOP
	case op == 0x74 || op == 0x0F84:
		p.kind = peekJE
	case op == 0x75 || op == 0x0F85:
		p.kind = peekJNE
	case op == 0x8D && b[modrm]&0xC7 == 0x05: // mod 00, r/m 101: [RIP+disp32]
		p.kind = peekLeaRIP
		p.lea = pc + uint64(n) + uint64(int64(int32(binary.LittleEndian.Uint32(b[modrm+1:]))))
	case op >= 0x88 && op <= 0x8B, op == 0x8D, op == 0xC6, op == 0xC7, op >= 0xB0 && op <= 0xBF:
		p.kind = peekMove
	}
	return p, true
}
