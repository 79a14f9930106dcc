package amd64

import (
	"strings"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/x86/x86asm"
)

// Arithmetic flags tracked by flagsDead.
const (
	fCF uint8 = 1 << iota
	fPF
	fZF
	fSF
	fOF
	fAll = fCF | fPF | fZF | fSF | fOF
)

func flagNames(f uint8) string {
	var s []string
	for i, n := range []string{"CF", "PF", "ZF", "SF", "OF"} {
		if f&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	return strings.Join(s, ",")
}

// flagReads lists the instructions that read arithmetic flags, with the flags
// they read. Unknown readers are caught by the allowlist in flagEffect.
var flagReads = map[x86asm.Op]uint8{
	x86asm.JA: fCF | fZF, x86asm.JBE: fCF | fZF, x86asm.JAE: fCF, x86asm.JB: fCF,
	x86asm.JE: fZF, x86asm.JNE: fZF, x86asm.JG: fZF | fSF | fOF, x86asm.JLE: fZF | fSF | fOF,
	x86asm.JGE: fSF | fOF, x86asm.JL: fSF | fOF, x86asm.JO: fOF, x86asm.JNO: fOF,
	x86asm.JP: fPF, x86asm.JNP: fPF, x86asm.JS: fSF, x86asm.JNS: fSF,
	x86asm.LOOPE: fZF, x86asm.LOOPNE: fZF,

	x86asm.SETA: fCF | fZF, x86asm.SETBE: fCF | fZF, x86asm.SETAE: fCF, x86asm.SETB: fCF,
	x86asm.SETE: fZF, x86asm.SETNE: fZF, x86asm.SETG: fZF | fSF | fOF, x86asm.SETLE: fZF | fSF | fOF,
	x86asm.SETGE: fSF | fOF, x86asm.SETL: fSF | fOF, x86asm.SETO: fOF, x86asm.SETNO: fOF,
	x86asm.SETP: fPF, x86asm.SETNP: fPF, x86asm.SETS: fSF, x86asm.SETNS: fSF,

	x86asm.CMOVA: fCF | fZF, x86asm.CMOVBE: fCF | fZF, x86asm.CMOVAE: fCF, x86asm.CMOVB: fCF,
	x86asm.CMOVE: fZF, x86asm.CMOVNE: fZF, x86asm.CMOVG: fZF | fSF | fOF, x86asm.CMOVLE: fZF | fSF | fOF,
	x86asm.CMOVGE: fSF | fOF, x86asm.CMOVL: fSF | fOF, x86asm.CMOVO: fOF, x86asm.CMOVNO: fOF,
	x86asm.CMOVP: fPF, x86asm.CMOVNP: fPF, x86asm.CMOVS: fSF, x86asm.CMOVNS: fSF,

	x86asm.FCMOVB: fCF, x86asm.FCMOVNB: fCF, x86asm.FCMOVE: fZF, x86asm.FCMOVNE: fZF,
	x86asm.FCMOVBE: fCF | fZF, x86asm.FCMOVNBE: fCF | fZF, x86asm.FCMOVU: fPF, x86asm.FCMOVNU: fPF,

	x86asm.ADC: fCF, x86asm.SBB: fCF, x86asm.RCL: fCF, x86asm.RCR: fCF, x86asm.CMC: fCF,
	x86asm.INTO:  fOF,
	x86asm.PUSHF: fAll, x86asm.PUSHFD: fAll, x86asm.PUSHFQ: fAll, x86asm.LAHF: fAll,
}

// flagWrites lists instructions that always define the given flags (flags left
// undefined by the SDM are not counted as written).
var flagWrites = map[x86asm.Op]uint8{
	x86asm.CMP: fAll, x86asm.TEST: fAll, x86asm.ADD: fAll, x86asm.SUB: fAll,
	x86asm.AND: fAll, x86asm.OR: fAll, x86asm.XOR: fAll, x86asm.NEG: fAll,
	x86asm.XADD: fAll, x86asm.CMPXCHG: fAll, x86asm.POPCNT: fAll, x86asm.PTEST: fAll,
	x86asm.UCOMISS: fAll, x86asm.UCOMISD: fAll, x86asm.COMISS: fAll, x86asm.COMISD: fAll,
	x86asm.VUCOMISS: fAll, x86asm.VUCOMISD: fAll, x86asm.VCOMISS: fAll, x86asm.VCOMISD: fAll,
	x86asm.VPTEST: fAll, x86asm.CMPSB: fAll, x86asm.CMPSW: fAll, x86asm.CMPSD: fAll, x86asm.CMPSQ: fAll,
	x86asm.SCASB: fAll, x86asm.SCASW: fAll, x86asm.SCASD: fAll, x86asm.SCASQ: fAll,
	x86asm.POPF: fAll, x86asm.POPFD: fAll, x86asm.POPFQ: fAll, x86asm.SAHF: fCF | fPF | fZF | fSF,
	x86asm.INC: fAll &^ fCF, x86asm.DEC: fAll &^ fCF,
	x86asm.MUL: fCF | fOF, x86asm.IMUL: fCF | fOF,
	x86asm.BT: fCF, x86asm.BTS: fCF, x86asm.BTR: fCF, x86asm.BTC: fCF,
	x86asm.BSF: fZF, x86asm.BSR: fZF, x86asm.TZCNT: fCF | fZF, x86asm.LZCNT: fCF | fZF,
	x86asm.CLC: fCF, x86asm.STC: fCF, x86asm.CMPXCHG8B: fZF, x86asm.CMPXCHG16B: fZF,
}

// flagNeutral lists instructions that neither read nor reliably write the
// arithmetic flags. Shifts and rotates are here: with a zero count they leave
// the flags alone, so they are not counted as writes (see flagEffect for the
// immediate-count case).
var flagNeutral = map[x86asm.Op]bool{
	x86asm.MOV: true, x86asm.MOVZX: true, x86asm.MOVSX: true, x86asm.MOVSXD: true,
	x86asm.MOVQ: true, x86asm.MOVD: true, x86asm.MOVBE: true, x86asm.MOVNTI: true,
	x86asm.MOVUPS: true, x86asm.MOVUPD: true, x86asm.MOVAPS: true, x86asm.MOVAPD: true,
	x86asm.MOVSD_XMM: true, x86asm.MOVSS: true, x86asm.MOVDQU: true, x86asm.MOVDQA: true,
	x86asm.MOVHPS: true, x86asm.MOVLPS: true, x86asm.MOVHPD: true, x86asm.MOVLPD: true,
	x86asm.MOVSB: true, x86asm.MOVSW: true, x86asm.MOVSD: true, x86asm.MOVSQ: true,
	x86asm.STOSB: true, x86asm.STOSW: true, x86asm.STOSD: true, x86asm.STOSQ: true,
	x86asm.LEA: true, x86asm.NOP: true, x86asm.PUSH: true, x86asm.POP: true,
	x86asm.XCHG: true, x86asm.BSWAP: true, x86asm.NOT: true,
	x86asm.CBW: true, x86asm.CWDE: true, x86asm.CDQE: true, x86asm.CWD: true, x86asm.CDQ: true, x86asm.CQO: true,
	x86asm.XORPS: true, x86asm.XORPD: true, x86asm.PXOR: true, x86asm.ANDPS: true, x86asm.ANDPD: true,
	x86asm.ANDNPS: true, x86asm.ANDNPD: true, x86asm.ORPS: true, x86asm.ORPD: true,
	x86asm.ADDSD: true, x86asm.ADDSS: true, x86asm.SUBSD: true, x86asm.SUBSS: true,
	x86asm.MULSD: true, x86asm.MULSS: true, x86asm.DIVSD: true, x86asm.DIVSS: true,
	x86asm.SQRTSD: true, x86asm.SQRTSS: true, x86asm.MINSD: true, x86asm.MAXSD: true,
	x86asm.MINSS: true, x86asm.MAXSS: true, x86asm.ROUNDSD: true, x86asm.ROUNDSS: true,
	x86asm.CVTSI2SD: true, x86asm.CVTSI2SS: true, x86asm.CVTSD2SS: true, x86asm.CVTSS2SD: true,
	x86asm.CVTTSD2SI: true, x86asm.CVTTSS2SI: true, x86asm.CVTSD2SI: true, x86asm.CVTSS2SI: true,
	x86asm.PSHUFD: true, x86asm.PSHUFB: true, x86asm.PUNPCKLQDQ: true, x86asm.PCMPEQB: true,
	x86asm.PMOVMSKB: true, x86asm.PADDQ: true, x86asm.PAND: true, x86asm.POR: true,
	x86asm.PREFETCHNTA: true, x86asm.PREFETCHT0: true, x86asm.PREFETCHT1: true,
	x86asm.PREFETCHT2: true, x86asm.PREFETCHW: true, x86asm.LFENCE: true, x86asm.MFENCE: true,
	x86asm.SFENCE: true, x86asm.PAUSE: true, x86asm.CPUID: true, x86asm.RDTSC: true, x86asm.RDTSCP: true,
	x86asm.SHL: true, x86asm.SHR: true, x86asm.SAR: true, x86asm.ROL: true, x86asm.ROR: true,
	x86asm.SHLD: true, x86asm.SHRD: true, x86asm.DIV: true, x86asm.IDIV: true,
	x86asm.SHLX: true, x86asm.SHRX: true, x86asm.SARX: true, x86asm.RORX: true,
	x86asm.MULX: true, x86asm.PDEP: true, x86asm.PEXT: true,
	x86asm.ANDN: true, x86asm.BLSR: true, x86asm.BZHI: true, x86asm.CRC32: true,
}

// flagEffect returns the flags in read and written by in, and whether in is
// understood at all.
func flagEffect(in inst) (reads, writes uint8, known bool) {
	if r, ok := flagReads[in.Op]; ok {
		return r, 0, true
	}
	if w, ok := flagWrites[in.Op]; ok {
		return 0, w, true
	}
	switch in.Op {
	case x86asm.SHL, x86asm.SHR, x86asm.SAR:
		// With an immediate count in 1..width-1 CF, ZF, SF, PF are defined
		// (OF only for a count of 1); other counts may leave flags alone.
		c, ok := in.Inst.Args[1].(x86asm.Imm)
		if width := operandBits(in.Inst.Args[0], in.Inst.MemBytes); ok && width >= 8 {
			// The CPU masks the count to 5 bits (6 for 64-bit operands).
			if width == 64 {
				c &= 63
			} else {
				c &= 31
			}
			switch {
			case c == 1:
				return 0, fAll, true
			case c > 1 && c < x86asm.Imm(width):
				return 0, fAll &^ fOF, true
			}
		}
		return 0, 0, true
	}
	if flagNeutral[in.Op] {
		return 0, 0, true
	}
	// VEX/EVEX-encoded vector instructions leave EFLAGS alone, except the
	// compares and tests listed in flagWrites.
	if name := in.Op.String(); strings.HasPrefix(name, "V") {
		return 0, 0, true
	}
	return 0, 0, false
}

// flagsDead proves that the arithmetic flags (ZF, CF, SF, OF, PF) are dead at
// pc: the straight-line path from pc writes all of them, or reaches a CALL or
// RET (Go's ABI keeps no flags live across either), before anything reads one.
// It follows up to 4 direct JMPs and 32 instructions. An instruction outside
// the known readers, writers and flag-neutral allowlist, an indirect jump, a
// trap, or running out of budget means "not proven": the error says why. It is
// conservative by design: flags an instruction leaves undefined are not
// counted as written.
func flagsDead(m arch.Memory, pc uint64) error {
	start := pc
	live := fAll // flags that may still carry the value of before pc
	jumps := 0
	for n := 0; n < flagsMaxInsts; n++ {
		in, err := decode(m, pc)
		if err != nil {
			return err
		}
		if in.Op == x86asm.CALL || in.Op == x86asm.RET {
			return nil
		}
		if in.Op == x86asm.JMP {
			if in.Target == 0 {
				return shapeErr(in.PC, "flags at %#x not proven dead: indirect jump %v (%s live)", start, in.Inst, flagNames(live))
			}
			if jumps++; jumps > maxJumps {
				return shapeErr(in.PC, "flags at %#x not proven dead: more than %d jumps", start, maxJumps)
			}
			pc = in.Target
			continue
		}
		reads, writes, known := flagEffect(in)
		if !known {
			return shapeErr(in.PC, "flags at %#x not proven dead: %v not understood (%s live)", start, in.Inst, flagNames(live))
		}
		if reads&live != 0 {
			return shapeErr(in.PC, "flags at %#x not proven dead: %v reads %s", start, in.Inst, flagNames(reads&live))
		}
		if live &^= writes; live == 0 {
			return nil
		}
		if isCondJump(in.Op) || isUncond(in) {
			return shapeErr(in.PC, "flags at %#x not proven dead: %v (%s live)", start, in.Inst, flagNames(live))
		}
		pc = in.End()
	}
	return shapeErr(start, "flags not proven dead within %d instructions (%s live)", flagsMaxInsts, flagNames(live))
}

// operandBits returns the width of a register or memory operand, or 0.
func operandBits(a x86asm.Arg, memBytes int) int {
	switch a := a.(type) {
	case x86asm.Reg:
		switch {
		case a >= x86asm.AL && a <= x86asm.R15B:
			return 8
		case a >= x86asm.AX && a <= x86asm.R15W:
			return 16
		case a >= x86asm.EAX && a <= x86asm.R15L:
			return 32
		case a >= x86asm.RAX && a <= x86asm.R15:
			return 64
		}
	case x86asm.Mem:
		return memBytes * 8
	}
	return 0
}
