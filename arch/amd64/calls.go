package amd64

import (
	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/x86/x86asm"
)

// calls follows the constant values of registers through the function [entry, end)
// (Arch.Calls): what LEA of a RIP-relative address and MOV of an immediate or of
// another known register put there; anything else that writes a register, and every
// call, forgets it. At each call that want accepts it reports the argument registers
// and the store of the result's flag byte (AL) that follows.
func calls(m arch.Memory, entry, end uint64, want func(target uint64) bool, name func(pc uint64) string) []arch.Call {
	insts, err := decodeFunc(m, entry, end)
	if err != nil {
		return nil // assembly or undecodable: no call there to read
	}
	var out []arch.Call
	regs := map[x86asm.Reg]uint64{}
	for i, in := range insts {
		a := in.Inst.Args
		switch in.Op {
		case x86asm.LEA:
			if r, ok := a[0].(x86asm.Reg); ok && in.Mem != 0 {
				regs[wide(r)] = in.Mem
			}
			continue
		case x86asm.MOV:
			if r, ok := a[0].(x86asm.Reg); ok {
				switch v := a[1].(type) {
				case x86asm.Imm:
					regs[wide(r)] = uint64(v)
				case x86asm.Reg:
					if x, ok := regs[wide(v)]; ok {
						regs[wide(r)] = x
					} else {
						delete(regs, wide(r))
					}
				default:
					delete(regs, wide(r))
				}
				continue
			}
		case x86asm.CALL:
			if in.Target != 0 && want(in.Target) {
				c := arch.Call{PC: in.PC, Target: in.Target, Args: make([]uint64, len(abiRegs))}
				for j, r := range abiRegs {
					if v, ok := regs[r]; ok {
						c.Args[j], c.Known = v, c.Known|1<<j
					}
				}
				c.Stored = storedByte(insts[i+1:], name)
				out = append(out, c)
			}
			clear(regs) // calls clobber every register
			continue
		}
		// Anything else may write its first operand.
		if len(a) > 0 && a[0] != nil {
			if r, ok := a[0].(x86asm.Reg); ok {
				delete(regs, wide(r))
			}
		}
	}
	return out
}

// storedByte returns where the code right after a call stores AL, the result's first
// byte: MOVB AL, X(SB); or in a -race build, where the result is spilled and copied
// into the variable after the race detector is told, the X of LEAQ X(SB), AX; ...;
// CALL runtime.racewriterange, that call coming before any other within a few
// instructions. 0 if neither.
func storedByte(after []xinst, name func(pc uint64) string) uint64 {
	if len(after) == 0 {
		return 0
	}
	if st := after[0]; st.Op == x86asm.MOV && st.Mem != 0 {
		if r, ok := st.Inst.Args[1].(x86asm.Reg); ok && r == x86asm.AL {
			return st.Mem
		}
	}
	var v uint64
	for _, in := range after[:min(len(after), 12)] {
		switch {
		case in.Op == x86asm.LEA && in.Inst.Args[0] == x86asm.RAX:
			v = in.Mem
		case in.Op == x86asm.CALL:
			if in.Target != 0 && name(in.Target) == "runtime.racewriterange" {
				return v
			}
			return 0
		}
	}
	return 0
}

// wide names a register by its 64-bit form, so that MOVL $3, CX sets RCX.
func wide(r x86asm.Reg) x86asm.Reg {
	switch {
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return r - x86asm.EAX + x86asm.RAX
	case r >= x86asm.AX && r <= x86asm.R15W:
		return r - x86asm.AX + x86asm.RAX
	}
	return r
}
