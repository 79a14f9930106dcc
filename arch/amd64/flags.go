package amd64

import (
	"strings"

	"github.com/gosdt/gosdt/arch"
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

// fx is what an instruction does to the arithmetic flags: those it may read (a
// superset of the truth) and those it always writes (a subset: flags the SDM leaves
// undefined do not count as written).
type fx struct{ reads, writes uint8 }

var (
	neutral = fx{}
	writes  = fx{writes: fAll}
)

// Condition codes (the low nibble of Jcc, SETcc, CMOVcc): the flags each tests, by
// cc>>1, and their names.
var (
	ccFlags = [8]uint8{fOF, fCF, fZF, fCF | fZF, fSF, fPF, fSF | fOF, fZF | fSF | fOF}
	ccNames = [16]string{"O", "NO", "B", "AE", "E", "NE", "BE", "A", "S", "NS", "P", "NP", "L", "GE", "LE", "G"}
)

// aluNames are the ALU operations of 00-3F and the 80-83 group, by opcode>>3 or
// ModRM.reg; ADC and SBB read CF, CMP writes only flags.
var aluNames = [8]string{"ADD", "OR", "ADC", "SBB", "AND", "SUB", "XOR", "CMP"}

func aluFx(i uint8) fx {
	if i == 2 || i == 3 {
		return fx{reads: fCF}
	}
	return writes
}

// flagEffect returns what in does to the flags and its mnemonic, and whether the
// effect is known. It computes the families that follow a pattern (the ALU operations,
// the condition-code users, the shifts, VEX and EVEX code) and looks the rest up in
// flagRows. The name may be given where the effect is not known (RET, UD2), for
// messages.
func flagEffect(in *inst) (e fx, name string, known bool) {
	if in.enc != encLegacy {
		return vexFlags(in)
	}
	op, cc := in.op, in.op&0xF
	switch in.m {
	case mapOne:
		switch {
		case op < 0x40 && op&7 < 6:
			return aluFx(op >> 3), aluNames[op>>3], true
		case op >= 0x80 && op <= 0x83:
			return aluFx(in.regDigit()), aluNames[in.regDigit()], true
		case op >= 0x70 && op <= 0x7F:
			return fx{reads: ccFlags[cc>>1]}, "J" + ccNames[cc], true
		case op == 0xC0, op == 0xC1, op >= 0xD0 && op <= 0xD3:
			return shiftFx(in)
		case op == 0xA6, op == 0xA7, op == 0xAE, op == 0xAF:
			name := [2]string{"CMPS", "SCAS"}[op>>3&1]
			if in.pfx&(pF2|pF3) != 0 {
				return neutral, "REP " + name, true // with a zero count, no flag is written
			}
			return writes, name, true
		case op == 0x90 && in.pfx&pF3 != 0:
			return neutral, "PAUSE", true
		case op == 0x90 && in.rex&1 != 0:
			return neutral, "XCHG", true
		}
	case map0F:
		switch op & 0xF0 {
		case 0x40:
			return fx{reads: ccFlags[cc>>1]}, "CMOV" + ccNames[cc], true
		case 0x80:
			return fx{reads: ccFlags[cc>>1]}, "J" + ccNames[cc], true
		case 0x90:
			return fx{reads: ccFlags[cc>>1]}, "SET" + ccNames[cc], true
		}
	}
	r, ok := flagTable().find(in)
	return r.fx, r.name, ok && r.known
}

// flagRows is what flagEffect looks up: the flags each instruction reads and those it
// always writes, by encoding, and its name. An encoding is [P:]OP[-OP][/R][m|r]=NAME:
// P the mandatory prefix (66, F3, F2, or - for none; without it, any), OP a hex opcode
// of the one-byte map or after 0F, 0F38 or 0F3A, R the ModRM.reg values of a group
// (a digit or a range), m or r for its memory or register form only. known false
// names instructions whose effect is not known (a proof stops there).
var flagRows = []struct {
	fx
	known bool
	encs  string
}{
	// Moves, exchanges, the stack, sign extension; no flag.
	{neutral, true, "50-57=PUSH 58-5F=POP 63=MOVSXD 68=PUSH 6A=PUSH 86-87=XCHG 88-8B=MOV 8D=LEA 8F=POP 90=NOP " +
		"91-97=XCHG 98=CDQE 99=CQO A4-A5=MOVS AA-AB=STOS B0-BF=MOV C6-C7=MOV F6-F7/2=NOT F6-F7/6=DIV " +
		"F6-F7/7=IDIV FF/6=PUSH 0FB6-0FB7=MOVZX 0FBE-0FBF=MOVSX 0FC3=MOVNTI 0FC8-0FCF=BSWAP 0FA4-0FA5=SHLD 0FAC-0FAD=SHRD"},
	// Prefetches, fences, timers.
	{neutral, true, "0F01/7r=RDTSCP 0F0D/1m=PREFETCHW 0F18/0-3m=PREFETCH 0F1F=NOP 0F31=RDTSC 0FA2=CPUID " +
		"0FAE/5r=LFENCE 0FAE/6r=MFENCE 0FAE/7r=SFENCE"},
	// SSE moves.
	{neutral, true, "-:0F10-0F11=MOVUPS 66:0F10-0F11=MOVUPD F3:0F10-0F11=MOVSS F2:0F10-0F11=MOVSD -:0F12m=MOVLPS " +
		"-:0F13m=MOVLPS 66:0F12-0F13=MOVLPD -:0F16m=MOVHPS -:0F17m=MOVHPS 66:0F16-0F17=MOVHPD -:0F28-0F29=MOVAPS " +
		"66:0F28-0F29=MOVAPD 0F6E=MOVD/MOVQ 0F7E=MOVD/MOVQ -:0F6F=MOVQ -:0F7F=MOVQ 66:0F6F=MOVDQA 66:0F7F=MOVDQA " +
		"F3:0F6F=MOVDQU F3:0F7F=MOVDQU 66:0FD6=MOVQ"},
	// SSE scalar arithmetic and conversions.
	{neutral, true, "F3:0F2A=CVTSI2SS F2:0F2A=CVTSI2SD F3:0F2C=CVTTSS2SI F2:0F2C=CVTTSD2SI F3:0F2D=CVTSS2SI " +
		"F2:0F2D=CVTSD2SI F3:0F51=SQRTSS F2:0F51=SQRTSD F3:0F58=ADDSS F2:0F58=ADDSD F3:0F59=MULSS F2:0F59=MULSD " +
		"F3:0F5A=CVTSS2SD F2:0F5A=CVTSD2SS F3:0F5C=SUBSS F2:0F5C=SUBSD F3:0F5D=MINSS F2:0F5D=MINSD F3:0F5E=DIVSS " +
		"F2:0F5E=DIVSD F3:0F5F=MAXSS F2:0F5F=MAXSD 66:0F3A0A=ROUNDSS 66:0F3A0B=ROUNDSD"},
	// SSE logic, shuffles, compares into vector registers; MOVBE, CRC32.
	{neutral, true, "-:0F54=ANDPS 66:0F54=ANDPD -:0F55=ANDNPS 66:0F55=ANDNPD -:0F56=ORPS 66:0F56=ORPD " +
		"-:0F57=XORPS 66:0F57=XORPD 66:0F6C=PUNPCKLQDQ 66:0F70=PSHUFD 0F74=PCMPEQB 0FD4=PADDQ 0FD7=PMOVMSKB " +
		"0FDB=PAND 0FEB=POR 0FEF=PXOR 0F3800=PSHUFB -:0F38F0-0F38F1=MOVBE 66:0F38F0-0F38F1=MOVBE F2:0F38F0-0F38F1=CRC32"},
	// Writers of all five: compares, tests, exchanges that compare or add.
	{writes, true, "84-85=TEST A8-A9=TEST F6-F7/0=TEST F6-F7/3=NEG 9D=POPF -:0F2E=UCOMISS 66:0F2E=UCOMISD " +
		"-:0F2F=COMISS 66:0F2F=COMISD 0FB0-0FB1=CMPXCHG 0FC0-0FC1=XADD F3:0FB8=POPCNT 66:0F3817=PTEST"},
	{fx{writes: fAll &^ fCF}, true, "FE-FF/0=INC FE-FF/1=DEC"},
	{fx{writes: fCF | fOF}, true, "69=IMUL 6B=IMUL F6-F7/4=MUL F6-F7/5=IMUL 0FAF=IMUL"},
	{fx{writes: fCF}, true, "F8=CLC F9=STC 0FA3=BT 0FAB=BTS 0FB3=BTR 0FBB=BTC 0FBA/4=BT 0FBA/5=BTS 0FBA/6=BTR 0FBA/7=BTC"},
	{fx{writes: fZF}, true, "0FBC=BSF 0FBD=BSR 0FC7/1=CMPXCHG8B/16B"},
	{fx{writes: fCF | fZF}, true, "F3:0FBC=TZCNT F3:0FBD=LZCNT"},
	{fx{writes: fCF | fPF | fZF | fSF}, true, "9E=SAHF"},
	// Readers: the flags pushed or loaded, the carry complemented, the loops' ZF.
	{fx{reads: fAll}, true, "9C=PUSHF 9F=LAHF"},
	{fx{reads: fCF}, true, "F5=CMC"},
	{fx{reads: fZF}, true, "E0=LOOPNE E1=LOOPE"},
	// Control transfers and traps, and instructions left unknown: named for messages.
	{neutral, false, "C2-C3=RET C9=LEAVE CA-CB=LRET CC=INT3 CD=INT D7=XLAT E2=LOOP E3=JRCXZ E8=CALL E9=JMP " +
		"EB=JMP F4=HLT FC=CLD FD=STD FF/2=CALL FF/4=JMP 0F05=SYSCALL 0F0B=UD2 0F01/2r=XGETBV 0FC7/6=RDRAND"},
}

// flagRow is one encoding of flagRows.
type flagRow struct {
	fx
	known    bool
	m, op    uint8
	pfx, reg uint8 // the mandatory prefix (0 any, 1 none, 2 66, 3 F3, 4 F2), ModRM.reg+1 (0 any)
	form     byte  // 'm', 'r', or 0 for both
	name     string
}

// flagIndex is flagRows by opcode: the rows of map m, opcode op are rows[at>>4:][:at&15]
// with at = at[m][op].
type flagIndex struct {
	at   [4][256]uint16
	rows []flagRow
}

//go:generate go test -run TestFlagTableGenerated -update-flags .

// flagTable is flagRows indexed: flagIndexGen, generated from them (flags_gen.go) so
// that the first seal of every program, at its start, neither parses them nor builds
// the index on the heap. TestFlagTableGenerated checks it against parseFlagTable.
func flagTable() *flagIndex { return &flagIndexGen }

// parseFlagTable parses flagRows and indexes them: what flags_gen.go holds.
func parseFlagTable() *flagIndex {
	rows := make([]flagRow, 0, 256) // flagRows expands to 244
	for _, row := range flagRows {
		for encs := row.encs; encs != ""; {
			var enc string
			enc, encs, _ = strings.Cut(encs, " ")
			rows = parseFlagRow(rows, enc, row.fx, row.known)
		}
	}
	// Index the rows by opcode: count them, give each opcode its start, place them.
	var count, placed [4][256]uint16
	for _, r := range rows {
		count[r.m][r.op]++
	}
	t := &flagIndex{rows: make([]flagRow, len(rows))}
	next := uint16(0)
	for m := range count {
		for op, n := range count[m] {
			if n > 0 { // an opcode without rows is 0, as flags_gen.go leaves it
				t.at[m][op] = next<<4 | n
			}
			next += n
		}
	}
	for _, r := range rows {
		t.rows[t.at[r.m][r.op]>>4+placed[r.m][r.op]] = r
		placed[r.m][r.op]++
	}
	return t
}

// parseFlagRow appends the rows of one encoding of flagRows to rows. It panics on a
// malformed one (TestFlagRows parses them all).
func parseFlagRow(rows []flagRow, enc string, e fx, known bool) []flagRow {
	spec, name, _ := strings.Cut(enc, "=")
	r := flagRow{fx: e, known: known, name: name}
	if p, rest, ok := strings.Cut(spec, ":"); ok {
		switch p {
		case "-":
			r.pfx = 1
		case "66":
			r.pfx = 2
		case "F3":
			r.pfx = 3
		case "F2":
			r.pfx = 4
		default:
			panic("amd64: bad prefix in flagRows: " + enc)
		}
		spec = rest
	}
	if c := spec[len(spec)-1]; c == 'm' || c == 'r' {
		r.form, spec = c, spec[:len(spec)-1]
	}
	spec, regs, _ := strings.Cut(spec, "/")
	lo, hi, ok := strings.Cut(spec, "-")
	if !ok {
		hi = lo
	}
	rlo, rhi, ok := strings.Cut(regs, "-")
	if !ok {
		rhi = rlo
	}
	m, op0 := parseOpcode(lo)
	m1, op1 := parseOpcode(hi)
	n := len(rows)
	for op := int(op0); op <= int(op1) && m1 == m; op++ {
		for reg := digit(rlo); reg <= digit(rhi); reg++ {
			r.m, r.op, r.reg = m, uint8(op), uint8(reg)
			rows = append(rows, r)
		}
	}
	if len(rows) == n || name == "" {
		panic("amd64: bad flagRows encoding " + enc)
	}
	return rows
}

// parseOpcode reads a hex opcode after its map's escape bytes: 90, 0F1F, 0F38F0.
func parseOpcode(s string) (m, op uint8) {
	switch {
	case len(s) == 6 && s[:4] == "0F38":
		m = map0F38
	case len(s) == 6 && s[:4] == "0F3A":
		m = map0F3A
	case len(s) == 4 && s[:2] == "0F":
		m = map0F
	case len(s) != 2:
		panic("amd64: bad opcode in flagRows: " + s)
	}
	hi, lo := hexDigit(s[len(s)-2]), hexDigit(s[len(s)-1])
	if hi < 0 || lo < 0 {
		panic("amd64: bad opcode in flagRows: " + s)
	}
	return m, uint8(hi<<4 | lo)
}

// hexDigit is c's value as an upper-case hex digit, -1 if it is none. The table is
// parsed at the first seal of every program, which strconv made a tenth slower.
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// digit is a ModRM.reg digit as a row's reg (+1), 0 for none.
func digit(s string) int {
	if s == "" {
		return 0
	}
	if s[0] < '0' || s[0] > '7' || len(s) != 1 {
		panic("amd64: bad ModRM.reg in flagRows: " + s)
	}
	return int(s[0]-'0') + 1
}

// find returns the row of in: of those of its opcode that match its mandatory prefix,
// ModRM.reg and form, the most specific (a prefix named counts more than a ModRM.reg).
func (t *flagIndex) find(in *inst) (flagRow, bool) {
	mand := uint8(1) // none
	switch {
	case in.pfx&pF3 != 0:
		mand = 3
	case in.pfx&pF2 != 0:
		mand = 4
	case in.pfx&p66 != 0:
		mand = 2
	}
	reg, mem := uint8(0), in.hasRM && in.mod() != 3
	if in.hasRM {
		reg = in.regDigit() + 1
	}
	a := t.at[in.m][in.op]
	best, score := flagRow{}, -1
	for _, r := range t.rows[a>>4 : a>>4+a&15] {
		if r.pfx != 0 && r.pfx != mand || r.reg != 0 && r.reg != reg || r.form == 'm' && !mem || r.form == 'r' && mem {
			continue
		}
		s := 0
		if r.pfx != 0 {
			s += 2
		}
		if r.reg != 0 {
			s++
		}
		if s > score {
			best, score = r, s
		}
	}
	return best, score >= 0
}

// shiftFx is flagEffect for the shift and rotate group (C0, C1, D0-D3). ROL and ROR,
// RCL and RCR write no flag for certain (a zero count leaves them all), RCL and RCR
// read CF. SHL, SHR and SAR write CF, PF, ZF, SF with an immediate count in
// 1..width-1, and OF too for a count of 1; by CL, or with another count, nothing for
// certain.
func shiftFx(in *inst) (fx, string, bool) {
	reg := in.regDigit()
	switch reg {
	case 0, 1:
		return neutral, [2]string{"ROL", "ROR"}[reg], true
	case 2, 3:
		return fx{reads: fCF}, [2]string{"RCL", "RCR"}[reg-2], true
	case 6:
		return neutral, "SAL", false
	}
	name := [8]string{4: "SHL", 5: "SHR", 7: "SAR"}[reg]
	width := 8
	if in.op&1 != 0 {
		switch {
		case in.w():
			width = 64
		case in.pfx&p66 != 0:
			width = 16
		default:
			width = 32
		}
	}
	var c int
	switch in.op {
	case 0xC0, 0xC1:
		c = int(in.imm)
	case 0xD0, 0xD1:
		c = 1
	default:
		return neutral, name, true // by CL
	}
	if width == 64 { // the CPU masks the count to 6 bits for 64-bit operands, else 5
		c &= 63
	} else {
		c &= 31
	}
	switch {
	case c == 1:
		return writes, name, true
	case c > 1 && c < width:
		return fx{writes: fAll &^ fOF}, name, true
	}
	return neutral, name, true
}

// vexFlags is flagEffect for VEX and EVEX instructions. Vector code leaves the flags
// alone, except the compares and tests that write them all; the mask register
// instructions (KORTEST writes flags) and some BMI ones are unknown.
func vexFlags(in *inst) (fx, string, bool) {
	m, op, vex := in.m, in.op, in.enc == encVEX
	switch {
	case m == map0F && (op >= 0x41 && op <= 0x4B || op >= 0x90 && op <= 0x93 || op == 0x98 || op == 0x99),
		m == map0F3A && op >= 0x30 && op <= 0x33:
		return neutral, "mask register op", false
	case m == map0F && (op == 0x2E || op == 0x2F) && in.pfx&(pF2|pF3) == 0:
		return writes, "VUCOMISx/VCOMISx", true
	case m == map0F38 && op == 0x17 && vex:
		return writes, "VPTEST", true
	case m == map0F38 && op >= 0xF2 && op <= 0xF7 && vex:
		// ANDN, BLSR, BZHI, PEXT, PDEP, MULX, SHLX, SARX, SHRX; not BLSMSK, BLSI, BEXTR.
		switch {
		case op == 0xF2, op == 0xF3 && in.regDigit() == 1, op == 0xF5, op == 0xF6, op == 0xF7 && in.pfx != 0:
			return neutral, "BMI", true
		}
		return neutral, "BMI", false
	case m == map0F3A && op == 0xF0 && vex:
		return neutral, "RORX", true
	}
	return neutral, "AVX", true
}

// flagsDead proves that the arithmetic flags (ZF, CF, SF, OF, PF) are dead at
// pc: the straight-line path from pc writes all of them, or reaches a CALL or
// RET (Go's ABI keeps no flags live across either), before anything reads one.
// It follows up to 4 direct JMPs and 32 instructions. An instruction outside
// flagEffect's table, one the decoder does not know, an indirect jump, a trap,
// or running out of budget means "not proven": the error says why.
func flagsDead(m arch.Memory, pc uint64) error {
	start := pc
	live := fAll // flags that may still carry the value of before pc
	jumps := 0
	for n := 0; n < flagsMaxInsts; n++ {
		in, err := decodeAt(m, pc)
		if err != nil {
			return err
		}
		switch in.flow {
		case flowCall, flowCallInd, flowRet:
			return nil
		case flowJmp:
			if jumps++; jumps > maxJumps {
				return shapeErr(pc, "flags at %#x not proven dead: more than %d jumps", start, maxJumps)
			}
			pc = in.target(pc)
			continue
		case flowJmpInd:
			return shapeErr(pc, "flags at %#x not proven dead: indirect jump %v (%s live)", start, in.text(m, pc), flagNames(live))
		}
		e, _, known := flagEffect(&in)
		if !known {
			return shapeErr(pc, "flags at %#x not proven dead: %v not understood (%s live)", start, in.text(m, pc), flagNames(live))
		}
		if e.reads&live != 0 {
			return shapeErr(pc, "flags at %#x not proven dead: %v reads %s", start, in.text(m, pc), flagNames(e.reads&live))
		}
		if live &^= e.writes; live == 0 {
			return nil
		}
		if in.flow == flowJcc || in.flow == flowTrap {
			return shapeErr(pc, "flags at %#x not proven dead: %v (%s live)", start, in.text(m, pc), flagNames(live))
		}
		pc += uint64(in.n)
	}
	return shapeErr(start, "flags not proven dead within %d instructions (%s live)", flagsMaxInsts, flagNames(live))
}
