package amd64

import (
	"fmt"
	"sort"

	"golang.org/x/arch/x86/x86asm"
)

// MaxInstLen is the architectural limit on the length of one instruction.
const MaxInstLen = 15

// Inst is one decoded instruction with its absolute addresses resolved.
type Inst struct {
	PC     uint64
	Len    int
	Op     x86asm.Op
	Target uint64 // absolute target of a direct JMP/Jcc/CALL, else 0
	Mem    uint64 // absolute address of a RIP-relative memory operand, else 0
	Inst   x86asm.Inst
}

// End is the address just past the instruction.
func (in Inst) End() uint64 { return in.PC + uint64(in.Len) }

func (in Inst) String() string {
	return fmt.Sprintf("%#x: %v", in.PC, in.Inst)
}

// Decode decodes the one instruction at pc (once, if m is a *Cache).
func Decode(m Memory, pc uint64) (Inst, error) {
	if c, ok := m.(*Cache); ok {
		return c.decode(pc)
	}
	b := m.Read(pc, MaxInstLen)
	if len(b) == 0 {
		return Inst{}, shapeErr(pc, "no code mapped")
	}
	return decodeBytes(b, pc)
}

func decodeBytes(b []byte, pc uint64) (Inst, error) {
	xi, err := x86asm.Decode(b, 64)
	if err != nil {
		return Inst{}, shapeErr(pc, "cannot decode % x: %v", b[:min(len(b), 8)], err)
	}
	in := Inst{PC: pc, Len: xi.Len, Op: xi.Op, Inst: xi}
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
				in.Mem = end + uint64(a.Disp)
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

// isINT3 reports whether in is the one-byte breakpoint INT3 (CC).
func isINT3(in Inst) bool {
	return in.Op == x86asm.INT && in.Len == 1
}

// isUncond reports whether control never falls through past the instruction.
func isUncond(in Inst) bool {
	if isINT3(in) {
		return true
	}
	switch in.Op {
	case x86asm.RET, x86asm.JMP, x86asm.UD2, x86asm.LJMP, x86asm.LRET,
		x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.HLT:
		return true
	}
	return false
}

// DecodeFunc decodes a Go function linearly from entry.
//
// It stops at end when end != 0. When end == 0 it stops after an unconditional
// transfer (RET, JMP, UD2, INT3) whose next pc is not in the function, or at
// INT3 padding (an INT3 after an unconditional transfer that no branch seen so
// far jumps to or past). inFunc decides membership; when it is nil, a pc is in
// the function while some direct branch seen so far targets it or a later pc
// (the classic linear-sweep rule; an indirect JMP never ends the sweep then,
// since jump-table cases follow it). Undecodable bytes are an error naming the
// pc, and so is code that ends before end.
func DecodeFunc(m Memory, entry, end uint64, inFunc func(pc uint64) bool) ([]Inst, error) {
	var insts []Inst
	var maxTarget uint64 // furthest direct jump target seen
	prevUncond := false
	for pc := entry; end == 0 || pc < end; {
		b := m.Read(pc, MaxInstLen)
		if end != 0 && uint64(len(b)) > end-pc {
			b = b[:end-pc]
		}
		if len(b) == 0 {
			if end != 0 {
				return insts, shapeErr(pc, "function ends before %#x: no code mapped", end)
			}
			break
		}
		if end == 0 && b[0] == 0xCC && prevUncond && pc > maxTarget {
			break // INT3 padding between functions
		}
		in, err := decodeBytes(b, pc)
		if err != nil {
			return insts, err
		}
		insts = append(insts, in)
		if in.Target != 0 && isJump(in.Op) && in.Target > maxTarget {
			maxTarget = in.Target
		}
		pc = in.End()
		prevUncond = isUncond(in)
		if end == 0 && prevUncond {
			if inFunc != nil {
				if !inFunc(pc) {
					break
				}
			} else if pc > maxTarget && !(in.Op == x86asm.JMP && in.Target == 0) {
				break
			}
		}
	}
	return insts, nil
}

// Index returns the index of the instruction that starts exactly at pc.
func Index(insts []Inst, pc uint64) (int, bool) {
	i := sort.Search(len(insts), func(i int) bool { return insts[i].PC >= pc })
	if i < len(insts) && insts[i].PC == pc {
		return i, true
	}
	return i, false
}

// BranchTargets returns every direct branch target in the function: those of
// JMP and Jcc, and of CALLs that land inside the decoded range.
func BranchTargets(insts []Inst) map[uint64]bool {
	t := make(map[uint64]bool)
	if len(insts) == 0 {
		return t
	}
	lo, hi := insts[0].PC, insts[len(insts)-1].End()
	for _, in := range insts {
		if in.Target == 0 {
			continue
		}
		if isJump(in.Op) || (in.Target >= lo && in.Target < hi) {
			t[in.Target] = true
		}
	}
	return t
}
