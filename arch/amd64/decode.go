package amd64

import (
	"fmt"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/x86/x86asm"
)

// xinst is one instruction decoded by x86asm, with its absolute addresses resolved.
type xinst struct {
	PC     uint64
	Len    int
	Op     x86asm.Op
	Target uint64 // absolute target of a direct JMP/Jcc/CALL, else 0
	Mem    uint64 // absolute address of a RIP-relative memory operand, else 0
	Inst   x86asm.Inst
}

// End is the address just past the instruction.
func (in xinst) End() uint64 { return in.PC + uint64(in.Len) }

func (in xinst) String() string {
	return fmt.Sprintf("%#x: %v", in.PC, in.Inst)
}

func decodeBytes(b []byte, pc uint64) (xinst, error) {
	xi, err := x86asm.Decode(b, 64)
	if err != nil {
		return xinst{}, shapeErr(pc, "cannot decode % x: %v", b[:min(len(b), 8)], err)
	}
	in := xinst{PC: pc, Len: xi.Len, Op: xi.Op, Inst: xi}
	end := pc + uint64(xi.Len)
	for _, a := range xi.Args {
		switch a := a.(type) {
		case nil:
		case x86asm.Rel:
			if isJump(xi.Op) || xi.Op == x86asm.CALL {
				in.Target = end + uint64(int64(a))
			}
		case x86asm.Mem:
			if a.Base == x86asm.RIP && a.Index == 0 {
				// A RIP-relative displacement is 32 bits, signed; x86asm gives it
				// zero-extended (RIP+0xfffaaa1f for -0x555e1).
				in.Mem = end + uint64(int64(int32(a.Disp)))
			}
		}
	}
	return in, nil
}

// isJump reports whether op is a direct or indirect jump (conditional or not).
func isJump(op x86asm.Op) bool {
	return op == x86asm.JMP || isCondJump(op)
}

func isCondJump(op x86asm.Op) bool {
	switch op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JCXZ, x86asm.JE,
		x86asm.JECXZ, x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE,
		x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JRCXZ,
		x86asm.JS, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return true
	}
	return false
}

// isUncond reports whether control never falls through past the instruction.
func isUncond(in xinst) bool {
	switch in.Op {
	case x86asm.INT:
		return in.Len == 1 // INT3 (CC)
	case x86asm.RET, x86asm.JMP, x86asm.UD2, x86asm.LJMP, x86asm.LRET,
		x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.HLT:
		return true
	}
	return false
}

// decodeFunc decodes the function [entry, end) linearly with x86asm: every
// instruction, where walk only finds their boundaries. Undecodable bytes are an error
// naming the pc, and so is code that ends before end.
func decodeFunc(m arch.Memory, entry, end uint64) ([]xinst, error) {
	var insts []xinst
	for pc := entry; pc < end; {
		b := m.Read(pc, int(min(end-pc, maxInstLen)))
		if len(b) == 0 {
			return insts, shapeErr(pc, "function ends before %#x: no code mapped", end)
		}
		in, err := decodeBytes(b, pc)
		if err != nil {
			return insts, err
		}
		insts = append(insts, in)
		pc = in.End()
	}
	return insts, nil
}

// decodeAt decodes the instruction at pc with the decoder; an instruction it does not
// know is an error naming pc and the bytes.
func decodeAt(m arch.Memory, pc uint64) (inst, error) {
	var in inst
	b := m.Read(pc, maxInstLen)
	if len(b) == 0 {
		return in, shapeErr(pc, "no code mapped")
	}
	if !decodeInst(b, &in) {
		return in, shapeErr(pc, "cannot decode % x: not an instruction the decoder knows", b[:min(len(b), 8)])
	}
	return in, nil
}

// text is the instruction at pc for messages: its mnemonic where the decoder knows
// one, and its bytes.
func (in *inst) text(m arch.Memory, pc uint64) string {
	b := m.Read(pc, int(in.n))
	if _, name, _ := flagEffect(in); name != "" {
		return fmt.Sprintf("%s (% x)", name, b)
	}
	return fmt.Sprintf("% x", b)
}
