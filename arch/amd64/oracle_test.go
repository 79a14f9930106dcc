package amd64

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gosdt/gosdt/arch"

	"golang.org/x/arch/x86/x86asm"
)

// The x86asm ops the tests name.
const (
	xNOP = x86asm.NOP
	xJE  = x86asm.JE
	xJNE = x86asm.JNE
	xLEA = x86asm.LEA
)

// xflowOf classifies an instruction decoded by x86asm as the decoder would.
func xflowOf(in xinst) flowKind {
	switch {
	case in.Op == x86asm.CALL:
		if in.Target != 0 {
			return flowCall
		}
		return flowCallInd
	case in.Op == x86asm.JMP:
		if in.Target != 0 {
			return flowJmp
		}
		return flowJmpInd
	case isCondJump(in.Op):
		return flowJcc
	case in.Op == x86asm.RET:
		return flowRet
	case isUncond(in):
		return flowTrap
	}
	return flowNext
}

// xabsolute returns the displacement of x's memory operand if x86asm reads it as an
// absolute address ([disp32]: no base, no index).
func xabsolute(x xinst) (int32, bool) {
	for _, a := range x.Inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Index == 0 {
			return int32(m.Disp), true
		}
	}
	return 0, false
}

// The flag table flagsDead used with x86asm, by x86asm.Op: the oracle of flagEffect.

// xflagRows is what flagsDead knew of instructions: the flags each reads and the flags
// it always writes (flags the SDM leaves undefined are not counted as written), by
// group. Instructions in no row are unknown and stop the proof. Shifts and rotates are
// in the neutral rows: with a zero count they leave the flags alone (see flagEffect
// for the immediate-count case).
var xflagRows = []struct {
	reads, writes uint8
	ops           []x86asm.Op
}{
	// Condition codes, by the flags they test: Jcc, SETcc, CMOVcc and the like.
	{fCF | fZF, 0, []x86asm.Op{x86asm.JA, x86asm.JBE, x86asm.SETA, x86asm.SETBE, x86asm.CMOVA, x86asm.CMOVBE, x86asm.FCMOVBE, x86asm.FCMOVNBE}},
	{fCF, 0, []x86asm.Op{x86asm.JAE, x86asm.JB, x86asm.SETAE, x86asm.SETB, x86asm.CMOVAE, x86asm.CMOVB, x86asm.FCMOVB, x86asm.FCMOVNB, x86asm.ADC, x86asm.SBB, x86asm.RCL, x86asm.RCR, x86asm.CMC}},
	{fZF, 0, []x86asm.Op{x86asm.JE, x86asm.JNE, x86asm.LOOPE, x86asm.LOOPNE, x86asm.SETE, x86asm.SETNE, x86asm.CMOVE, x86asm.CMOVNE, x86asm.FCMOVE, x86asm.FCMOVNE}},
	{fZF | fSF | fOF, 0, []x86asm.Op{x86asm.JG, x86asm.JLE, x86asm.SETG, x86asm.SETLE, x86asm.CMOVG, x86asm.CMOVLE}},
	{fSF | fOF, 0, []x86asm.Op{x86asm.JGE, x86asm.JL, x86asm.SETGE, x86asm.SETL, x86asm.CMOVGE, x86asm.CMOVL}},
	{fOF, 0, []x86asm.Op{x86asm.JO, x86asm.JNO, x86asm.SETO, x86asm.SETNO, x86asm.CMOVO, x86asm.CMOVNO, x86asm.INTO}},
	{fPF, 0, []x86asm.Op{x86asm.JP, x86asm.JNP, x86asm.SETP, x86asm.SETNP, x86asm.CMOVP, x86asm.CMOVNP, x86asm.FCMOVU, x86asm.FCMOVNU}},
	{fSF, 0, []x86asm.Op{x86asm.JS, x86asm.JNS, x86asm.SETS, x86asm.SETNS, x86asm.CMOVS, x86asm.CMOVNS}},
	{fAll, 0, []x86asm.Op{x86asm.PUSHF, x86asm.PUSHFD, x86asm.PUSHFQ, x86asm.LAHF}},

	// Writers.
	{0, fAll, []x86asm.Op{
		x86asm.CMP, x86asm.TEST, x86asm.ADD, x86asm.SUB, x86asm.AND, x86asm.OR, x86asm.XOR, x86asm.NEG, x86asm.XADD, x86asm.CMPXCHG,
		x86asm.POPCNT, x86asm.PTEST, x86asm.VPTEST, x86asm.UCOMISS, x86asm.UCOMISD, x86asm.COMISS, x86asm.COMISD, x86asm.VUCOMISS, x86asm.VUCOMISD,
		x86asm.VCOMISS, x86asm.VCOMISD, x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ, x86asm.SCASB, x86asm.SCASW,
		x86asm.SCASD, x86asm.SCASQ, x86asm.POPF, x86asm.POPFD, x86asm.POPFQ}},
	{0, fCF | fPF | fZF | fSF, []x86asm.Op{x86asm.SAHF}},
	{0, fAll &^ fCF, []x86asm.Op{x86asm.INC, x86asm.DEC}},
	{0, fCF | fOF, []x86asm.Op{x86asm.MUL, x86asm.IMUL}},
	{0, fCF, []x86asm.Op{x86asm.BT, x86asm.BTS, x86asm.BTR, x86asm.BTC, x86asm.CLC, x86asm.STC}},
	{0, fZF, []x86asm.Op{x86asm.BSF, x86asm.BSR, x86asm.CMPXCHG8B, x86asm.CMPXCHG16B}},
	{0, fCF | fZF, []x86asm.Op{x86asm.TZCNT, x86asm.LZCNT}},

	// Neither: moves, loads and stores; stack, exchange and sign extension.
	{0, 0, []x86asm.Op{
		x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.MOVQ, x86asm.MOVD, x86asm.MOVBE, x86asm.MOVNTI,
		x86asm.MOVUPS, x86asm.MOVUPD, x86asm.MOVAPS, x86asm.MOVAPD, x86asm.MOVSD_XMM, x86asm.MOVSS, x86asm.MOVDQU,
		x86asm.MOVDQA, x86asm.MOVHPS, x86asm.MOVLPS, x86asm.MOVHPD, x86asm.MOVLPD, x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD,
		x86asm.MOVSQ, x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ, x86asm.LEA, x86asm.NOP, x86asm.PUSH, x86asm.POP,
		x86asm.XCHG, x86asm.BSWAP, x86asm.NOT, x86asm.CBW, x86asm.CWDE, x86asm.CDQE, x86asm.CWD, x86asm.CDQ, x86asm.CQO}},
	// SSE arithmetic and logic, conversions, shuffles.
	{0, 0, []x86asm.Op{
		x86asm.XORPS, x86asm.XORPD, x86asm.PXOR, x86asm.ANDPS, x86asm.ANDPD, x86asm.ANDNPS, x86asm.ANDNPD, x86asm.ORPS, x86asm.ORPD,
		x86asm.ADDSD, x86asm.ADDSS, x86asm.SUBSD, x86asm.SUBSS, x86asm.MULSD, x86asm.MULSS, x86asm.DIVSD, x86asm.DIVSS,
		x86asm.SQRTSD, x86asm.SQRTSS, x86asm.MINSD, x86asm.MAXSD, x86asm.MINSS, x86asm.MAXSS, x86asm.ROUNDSD, x86asm.ROUNDSS,
		x86asm.CVTSI2SD, x86asm.CVTSI2SS, x86asm.CVTSD2SS, x86asm.CVTSS2SD, x86asm.CVTTSD2SI, x86asm.CVTTSS2SI, x86asm.CVTSD2SI,
		x86asm.CVTSS2SI, x86asm.PSHUFD, x86asm.PSHUFB, x86asm.PUNPCKLQDQ, x86asm.PCMPEQB, x86asm.PMOVMSKB, x86asm.PADDQ,
		x86asm.PAND, x86asm.POR}},
	// Prefetches, fences, timers; shifts, rotates, divisions and BMI.
	{0, 0, []x86asm.Op{
		x86asm.PREFETCHNTA, x86asm.PREFETCHT0, x86asm.PREFETCHT1, x86asm.PREFETCHT2, x86asm.PREFETCHW, x86asm.LFENCE,
		x86asm.MFENCE, x86asm.SFENCE, x86asm.PAUSE, x86asm.CPUID, x86asm.RDTSC, x86asm.RDTSCP,
		x86asm.SHL, x86asm.SHR, x86asm.SAR, x86asm.ROL, x86asm.ROR, x86asm.SHLD, x86asm.SHRD, x86asm.DIV, x86asm.IDIV, x86asm.SHLX,
		x86asm.SHRX, x86asm.SARX, x86asm.RORX, x86asm.MULX, x86asm.PDEP, x86asm.PEXT, x86asm.ANDN, x86asm.BLSR, x86asm.BZHI, x86asm.CRC32}},
}

// xflagTable is xflagRows by instruction: the flags read and written. Built when first
// needed, not at every program's start: a program whose sites came sealed never needs it.
var xflagTable = sync.OnceValue(func() map[x86asm.Op][2]uint8 {
	t := map[x86asm.Op][2]uint8{}
	for _, r := range xflagRows {
		for _, op := range r.ops {
			t[op] = [2]uint8{r.reads, r.writes}
		}
	}
	return t
})

// xflagEffect returns the flags in read and written by in, and whether in is
// understood at all.
func xflagEffect(in xinst) (reads, writes uint8, known bool) {
	switch in.Op {
	case x86asm.SHL, x86asm.SHR, x86asm.SAR:
		// With an immediate count in 1..width-1 CF, ZF, SF, PF are defined
		// (OF only for a count of 1); other counts may leave flags alone.
		c, ok := in.Inst.Args[1].(x86asm.Imm)
		if width := xoperandBits(in.Inst.Args[0], in.Inst.MemBytes); ok && width >= 8 {
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
	if e, ok := xflagTable()[in.Op]; ok {
		return e[0], e[1], true
	}
	// VEX/EVEX-encoded vector instructions leave EFLAGS alone, except the
	// compares and tests listed as writers.
	if name := in.Op.String(); strings.HasPrefix(name, "V") {
		return 0, 0, true
	}
	return 0, 0, false
}

// xoperandBits returns the width of a register or memory operand, or 0.
func xoperandBits(a x86asm.Arg, memBytes int) int {
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

// x86asm's reading of instructions, the oracle of the decoder.

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

func xdecode(b []byte, pc uint64) (xinst, error) {
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

// xdecodeFunc decodes the function [entry, end) linearly with x86asm: every
// instruction, where walk only finds their boundaries. Undecodable bytes are an error
// naming the pc, and so is code that ends before end.
func xdecodeFunc(m arch.Memory, entry, end uint64) ([]xinst, error) {
	var insts []xinst
	for pc := entry; pc < end; {
		b := m.Read(pc, int(min(end-pc, maxInstLen)))
		if len(b) == 0 {
			return insts, shapeErr(pc, "function ends before %#x: no code mapped", end)
		}
		in, err := xdecode(b, pc)
		if err != nil {
			return insts, err
		}
		insts = append(insts, in)
		pc = in.End()
	}
	return insts, nil
}
