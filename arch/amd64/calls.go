package amd64

import (
	"github.com/gosdt/gosdt/arch"
)

// General registers by number, as ModRM and REX name them.
const (
	rAX = iota
	rCX
	rDX
	rBX
	rSP
	rBP
	rSI
	rDI
)

// regs are the constants the code put in the general registers, as far as calls
// follows them.
type regs struct {
	val   [16]uint64
	known uint16
}

func (r *regs) set(n int, v uint64) { r.val[n], r.known = v, r.known|1<<n }
func (r *regs) forget(ns ...int) {
	for _, n := range ns {
		r.known &^= 1 << n
	}
}
func (r *regs) get(n int) (uint64, bool) { return r.val[n], r.known&(1<<n) != 0 }

// calls follows the constant values of registers through the function [entry, end)
// (Offline.Calls): what LEA of a RIP-relative address and MOV of an immediate or of
// another known register put there. Anything else that may write a register forgets
// it (a partial write too), an instruction whose effect on the registers is not
// listed forgets them all, and every call forgets them all. At each direct call that
// want accepts it reports the argument registers and the store of the result's flag
// byte (AL) that follows. A function with an instruction the decoder does not know
// has no calls to report.
func calls(m arch.Memory, entry, end uint64, want func(target uint64) bool, name func(pc uint64) string) []arch.Call {
	var insts []inst
	var pcs []uint64
	for pc := entry; pc < end; {
		var in inst
		if !decodeInst(m.Read(pc, int(min(end-pc, maxInstLen))), &in) {
			return nil // assembly or data: no call there to read
		}
		insts, pcs = append(insts, in), append(pcs, pc)
		pc += uint64(in.n)
	}
	var out []arch.Call
	var r regs
	for i := range insts {
		in, pc := &insts[i], pcs[i]
		if in.flow == flowCall || in.flow == flowCallInd {
			if t := in.target(pc); in.flow == flowCall && want(t) {
				c := arch.Call{PC: pc, Target: t, Args: make([]uint64, len(abiRegs))}
				for j, n := range abiRegs {
					if v, ok := r.get(n); ok {
						c.Args[j], c.Known = v, c.Known|1<<j
					}
				}
				c.Stored = storedByte(insts[i+1:], pcs[i+1:], name)
				out = append(out, c)
			}
			r.known = 0 // calls clobber every register
			continue
		}
		r.step(in, pc)
	}
	return out
}

// storedByte returns where the code right after a call stores AL, the result's first
// byte: MOVB AL, X(SB); or in a -race build, where the result is spilled and copied
// into the variable after the race detector is told, the X of LEAQ X(SB), AX; ...;
// CALL runtime.racewriterange, that call coming before any other within a few
// instructions. 0 if neither.
func storedByte(after []inst, pcs []uint64, name func(pc uint64) string) uint64 {
	if len(after) == 0 {
		return 0
	}
	if st := &after[0]; st.legacy(mapOne, 0x88) && st.rip && st.reg() == rAX {
		return st.mem(pcs[0])
	}
	var v uint64
	for i := range after[:min(len(after), 12)] {
		in := &after[i]
		switch {
		case in.legacy(mapOne, 0x8D) && in.w() && in.reg() == rAX:
			v = 0
			if in.rip {
				v = in.mem(pcs[i])
			}
		case in.flow == flowCall || in.flow == flowCallInd:
			if in.flow == flowCall && name(in.target(pcs[i])) == "runtime.racewriterange" {
				return v
			}
			return 0
		}
	}
	return 0
}

// size is an operand's width in bytes: 1 for the byte forms, else 2 with 66, 8 with
// REX.W, 4 otherwise.
func (in *inst) size(byteForm bool) int {
	switch {
	case byteForm:
		return 1
	case in.w():
		return 8
	case in.pfx&p66 != 0:
		return 2
	}
	return 4
}

// gpr is the general register a register operand numbered n (with its REX bit) names
// at size: without REX, byte registers 4-7 are AH, CH, DH, BH, parts of 0-3.
func (in *inst) gpr(n, size int) int {
	if size == 1 && in.rex == 0 && n >= 4 && n < 8 {
		return n - 4
	}
	return n
}

// write records that in sets register n (at size) to v, known or not: a 32-bit write
// zero-extends, a narrower one leaves the rest and is forgotten.
func (r *regs) write(n, size int, v uint64, known bool) {
	switch {
	case !known || size < 4:
		r.forget(n)
	case size == 4:
		r.set(n, uint64(uint32(v)))
	default:
		r.set(n, v)
	}
}

// step applies what in, at pc, does to the registers (calls are calls').
func (r *regs) step(in *inst, pc uint64) {
	if in.enc != encLegacy {
		r.stepVEX(in)
		return
	}
	op, reg, mod := in.op, in.reg(), in.mod()
	byteForm := op&1 == 0 // for the one-byte opcodes whose low bit selects 8 bits
	sz := in.size(byteForm)
	rm := in.gpr(in.rm(), sz)
	regR := in.gpr(reg, sz)
	// dst forgets the ModRM.rm register if it is one.
	dstRM := func() {
		if mod == 3 {
			r.forget(rm)
		}
	}
	// first forgets an operand that is read, not written, where it is a register of 16
	// bits or more (as the x86asm implementation did, which forgot every first operand).
	first := func(n, size int) {
		if size > 1 {
			r.forget(n)
		}
	}
	rep := in.pfx&(pF2|pF3) != 0
	switch in.m {
	case mapOne:
		switch {
		case op < 0x40 && op&7 < 6: // ADD OR ADC SBB AND SUB XOR CMP
			cmp := op>>3 == 7
			switch op & 7 {
			case 0, 1:
				if mod == 3 {
					if cmp {
						first(rm, sz)
					} else {
						r.forget(rm)
					}
				}
			case 2, 3:
				if cmp {
					first(regR, sz)
				} else {
					r.forget(regR)
				}
			case 4, 5:
				if cmp {
					first(rAX, sz)
				} else {
					r.forget(rAX)
				}
			}
			return
		case op >= 0x50 && op <= 0x57: // PUSH
			r.forget(rSP)
			first(int(op&7)|int(in.rex&1)<<3, 8)
			return
		case op >= 0x58 && op <= 0x5F: // POP
			r.forget(rSP, int(op&7)|int(in.rex&1)<<3)
			return
		case op >= 0x70 && op <= 0x7F, op == 0xE3, op == 0xE9, op == 0xEB, op == 0xCC, op == 0xF4,
			op == 0x9E, op == 0xF5, op == 0xF8, op == 0xF9, op == 0xFC, op == 0xFD:
			return // Jcc JRCXZ JMP INT3 HLT SAHF CMC CLC STC CLD STD
		case op >= 0x80 && op <= 0x83:
			if mod == 3 {
				if in.regDigit() == 7 {
					first(rm, sz)
				} else {
					r.forget(rm)
				}
			}
			return
		case op >= 0x90 && op <= 0x97:
			if op != 0x90 || in.rex&1 != 0 { // XCHG; not NOP or PAUSE
				r.forget(rAX, int(op&7)|int(in.rex&1)<<3)
			}
			return
		case op >= 0xB0 && op <= 0xB7: // MOV r8, imm8
			r.forget(in.gpr(int(op&7)|int(in.rex&1)<<3, 1))
			return
		case op >= 0xB8 && op <= 0xBF: // MOV r, imm
			r.write(int(op&7)|int(in.rex&1)<<3, in.size(false), uint64(in.imm), true)
			return
		case op >= 0xA4 && op <= 0xAF && op != 0xA8 && op != 0xA9: // string instructions
			switch op &^ 1 {
			case 0xA4, 0xA6: // MOVS CMPS
				r.forget(rSI, rDI)
			case 0xAA, 0xAE: // STOS SCAS
				r.forget(rDI)
			case 0xAC: // LODS
				r.forget(rSI, rAX)
			}
			if rep {
				r.forget(rCX)
			}
			return
		case op == 0xC0, op == 0xC1, op >= 0xD0 && op <= 0xD3: // shifts and rotates
			dstRM()
			return
		}
		switch op {
		case 0x63, 0x69, 0x6B: // MOVSXD IMUL
			r.forget(reg)
		case 0x68, 0x6A, 0x9C, 0x9D, 0xC2, 0xC3, 0xCA, 0xCB: // PUSH imm, PUSHF, POPF, RET
			r.forget(rSP)
		case 0x84, 0x85: // TEST
			if mod == 3 {
				first(rm, sz)
			}
		case 0xA8, 0xA9: // TEST AL/EAX, imm
			first(rAX, sz)
		case 0x86, 0x87: // XCHG
			r.forget(regR)
			dstRM()
		case 0x88, 0x8A, 0xC6: // MOV of a byte
			if op == 0x8A {
				r.forget(regR)
			} else {
				dstRM()
			}
		case 0x89: // MOV r/m, r
			if mod == 3 {
				v, ok := r.get(reg)
				r.write(rm, sz, v, ok)
			}
		case 0x8B: // MOV r, r/m
			v, ok := r.get(in.rm())
			r.write(reg, sz, v, ok && mod == 3)
		case 0x8D: // LEA
			r.write(reg, in.size(false), in.mem(pc), in.rip)
		case 0x8F: // POP r/m
			r.forget(rSP)
			dstRM()
		case 0xC7: // MOV r/m, imm32
			if mod == 3 {
				r.write(rm, sz, uint64(in.imm), true)
			}
		case 0x98, 0x9F, 0xD7: // CBW CWDE CDQE, LAHF, XLAT
			r.forget(rAX)
		case 0x99: // CWD CDQ CQO
			r.forget(rDX)
		case 0xC9: // LEAVE
			r.forget(rSP, rBP)
		case 0xE0, 0xE1, 0xE2: // LOOPcc, LOOP
			r.forget(rCX)
		case 0xF6, 0xF7:
			switch in.regDigit() {
			case 0: // TEST
				if mod == 3 {
					first(rm, sz)
				}
			case 2, 3: // NOT NEG
				dstRM()
			default: // MUL IMUL DIV IDIV: AX, or DX:AX
				r.forget(rAX)
				if op == 0xF7 {
					r.forget(rDX)
				}
				if mod == 3 {
					first(rm, sz)
				}
			}
		case 0xFE, 0xFF:
			switch in.regDigit() {
			case 0, 1: // INC DEC
				dstRM()
			case 4: // JMP r/m
				if mod == 3 {
					first(rm, 8)
				}
			case 6: // PUSH r/m
				r.forget(rSP)
				if mod == 3 {
					first(rm, 8)
				}
			default:
				r.known = 0
			}
		default: // INT imm8, and anything not listed
			r.known = 0
		}
	case map0F:
		r.step0F(in, in.size(false), in.rm(), first) // no byte forms but SETcc, CMPXCHG, XADD
	case map0F38:
		switch {
		case op == 0xF0 || op == 0xF1 && in.pfx&pF2 != 0: // MOVBE load, CRC32
			r.forget(reg)
		case op == 0xF6: // ADCX ADOX
			r.forget(reg)
		}
		// The rest (MOVBE store, SSSE3, SSE4, AES, SHA) writes vector registers or memory.
	case map0F3A:
		switch {
		case op >= 0x14 && op <= 0x17: // PEXTRB PEXTRW PEXTRD/Q EXTRACTPS
			if mod == 3 {
				r.forget(in.rm())
			}
		case op >= 0x60 && op <= 0x63: // PCMPxSTRx: ECX
			r.forget(rCX)
		}
	}
}

// step0F is step for the 0F map.
func (r *regs) step0F(in *inst, sz, rm int, first func(n, size int)) {
	op, reg, mod := in.op, in.reg(), in.mod()
	switch {
	case op >= 0x40 && op <= 0x4F: // CMOVcc
		r.forget(reg)
		return
	case op >= 0x80 && op <= 0x8F: // Jcc
		return
	case op >= 0x90 && op <= 0x9F: // SETcc
		if mod == 3 {
			r.forget(in.gpr(in.rm(), 1))
		}
		return
	case op >= 0xC8 && op <= 0xCF: // BSWAP
		r.forget(int(op&7) | int(in.rex&1)<<3)
		return
	}
	switch op {
	case 0x01: // RDTSCP, XGETBV
		r.forget(rAX, rDX)
		if in.modrm == 0xF9 {
			r.forget(rCX)
		}
	case 0x31: // RDTSC
		r.forget(rAX, rDX)
	case 0xA2: // CPUID
		r.forget(rAX, rBX, rCX, rDX)
	case 0x0B, 0x0D, 0x18, 0x1F, 0x77, 0xAE, 0xC3: // UD2 PREFETCH NOP EMMS fences LDMXCSR... MOVNTI
	case 0x2C, 0x2D, 0x50, 0xAF, 0xB6, 0xB7, 0xB8, 0xBC, 0xBD, 0xBE, 0xBF, 0xC5, 0xD7:
		// CVTTSx2SI CVTSx2SI MOVMSKPx IMUL MOVZX POPCNT BSF BSR TZCNT LZCNT MOVSX PEXTRW PMOVMSKB
		r.forget(reg)
	case 0x7E: // MOVD/MOVQ r/m, (x)mm; with F3, MOVQ xmm, xmm/m64
		if mod == 3 && in.pfx&pF3 == 0 {
			r.forget(in.rm())
		}
	case 0xA3: // BT
		if mod == 3 {
			first(rm, sz)
		}
	case 0xBA:
		if mod == 3 {
			if in.regDigit() == 4 { // BT imm8
				first(rm, sz)
			} else { // BTS BTR BTC
				r.forget(rm)
			}
		}
	case 0xAB, 0xB3, 0xBB, 0xA4, 0xA5, 0xAC, 0xAD: // BTS BTR BTC SHLD SHRD
		if mod == 3 {
			r.forget(rm)
		}
	case 0xB0, 0xB1: // CMPXCHG
		r.forget(rAX)
		if mod == 3 {
			r.forget(in.gpr(in.rm(), in.size(op == 0xB0)))
		}
	case 0xC0, 0xC1: // XADD
		r.forget(in.gpr(reg, in.size(op == 0xC0)))
		if mod == 3 {
			r.forget(in.gpr(in.rm(), in.size(op == 0xC0)))
		}
	case 0xC7:
		if in.regDigit() == 1 { // CMPXCHG8B, CMPXCHG16B
			r.forget(rAX, rDX)
		} else { // RDRAND
			r.forget(in.rm())
		}
	case 0x05: // SYSCALL
		r.known = 0
	default:
		// SSE and MMX instructions that write vector registers or memory.
		if legacyMaps[map0F][op]&aOK == 0 {
			r.known = 0
		}
	}
}

// stepVEX is step for VEX and EVEX instructions: the BMI instructions and the few
// vector ones that write a general register.
func (r *regs) stepVEX(in *inst) {
	op, m, mod := in.op, in.m, in.mod()
	switch {
	case m == map0F38 && op >= 0xF0 && op <= 0xF7:
		switch op {
		case 0xF3: // BLSR BLSMSK BLSI: into vvvv
			r.forget(int(in.vvvv & 15))
		case 0xF6: // MULX: into reg and vvvv
			r.forget(in.reg(), int(in.vvvv&15))
		default: // ANDN BZHI PDEP PEXT BEXTR SHLX SARX SHRX
			r.forget(in.reg())
		}
	case m == map0F3A && op == 0xF0: // RORX
		r.forget(in.reg())
	case m == map0F && (op == 0x2C || op == 0x2D || op == 0x50 || op == 0x78 || op == 0x79 || op == 0x93 || op == 0xC5 || op == 0xD7):
		// VCVTTSx2SI VCVTSx2SI VMOVMSKPx VCVTxx2USI KMOV r, k VPEXTRW VPMOVMSKB
		r.forget(in.reg())
	case m == map0F && op == 0x7E && in.pfx == p66, m == map0F3A && op >= 0x14 && op <= 0x17:
		// VMOVD/VMOVQ r/m, xmm; VPEXTRB/W/D/Q, VEXTRACTPS r/m, xmm
		if mod == 3 {
			r.forget(in.rm())
		}
	case m == map0F3A && op >= 0x60 && op <= 0x63: // VPCMPxSTRx: ECX
		r.forget(rCX)
	}
}
