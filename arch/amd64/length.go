package amd64

// A length decoder for the instructions the Go compiler emits. Discovery walks each
// function that holds a site from its entry, to prove the site starts on an instruction
// boundary and to collect every branch target: that walk needs each instruction's
// length and, for control transfers, its kind and target, nothing else. x86asm decodes
// everything (operands, names) at about half a microsecond and a few allocations per
// instruction; this table does the walk's part in a few nanoseconds without allocating.
//
// It answers only for encodings it knows exactly, and says "unknown" for everything
// else (other prefixes, x87, VEX/EVEX, rare or mode-dependent opcodes, most control
// transfers other than the plain ones): the caller then asks x86asm, so an unknown
// instruction costs time, never a wrong boundary. TestLengthAgreesWithX86asm checks it
// against x86asm on every instruction of real binaries, FuzzLength on random bytes.

// flowKind says how an instruction passes control on, as far as a function walk cares.
type flowKind uint8

const (
	flowNext    flowKind = iota // falls through to the next instruction
	flowJcc                     // conditional direct branch to Target (Jcc)
	flowJmp                     // direct JMP to Target
	flowCall                    // direct CALL to Target
	flowJmpInd                  // indirect JMP: never falls through
	flowCallInd                 // indirect CALL
	flowRet                     // RET: never falls through
	flowTrap                    // INT3 (and, from x86asm, UD2, HLT, far transfers): never falls through
)

// Per-opcode attributes in the tables below.
const (
	aModRM   uint16 = 1 << iota // a ModRM byte (and SIB, displacement) follows the opcode
	aImm8                       // an 8-bit immediate
	aImmZ                       // a 32-bit immediate, 16-bit with 66 (REX.W keeps 32)
	aImmV                       // B8+r: 32-bit immediate, 64-bit with REX.W, 16-bit with 66
	aMemOnly                    // ModRM must name memory (mod != 3)
	aReg0                       // ModRM.reg must be 0
	aRel8                       // rel8 branch (no prefix)
	aRel32                      // rel32 branch (no prefix)
	aGroup                      // ModRM.reg decides: see group
	aString                     // string instruction: REP/REPNE prefixes allowed
	aOK                         // a known opcode (the zero entry is unknown)

	// Prefixes allowed before a 0F-map opcode, beside REX: none, 66, F3, F2.
	pN
	p66
	pF3
	pF2
)

const (
	mrm  = aOK | aModRM
	pAll = pN | p66 | pF3 | pF2
	pNO  = pN | p66
)

// oneByte describes the one-byte opcode map in 64-bit mode. Unknown entries (0) are
// prefixes, opcodes invalid in 64-bit mode, x87, I/O, far and rare transfers.
var oneByte = func() (t [256]uint16) {
	for op := 0x00; op < 0x40; op += 8 { // ADD OR ADC SBB AND SUB XOR CMP
		t[op+0], t[op+1], t[op+2], t[op+3] = mrm, mrm, mrm, mrm
		t[op+4], t[op+5] = aOK|aImm8, aOK|aImmZ
	}
	for op := 0x50; op < 0x60; op++ { // PUSH, POP
		t[op] = aOK
	}
	t[0x63] = mrm // MOVSXD
	t[0x68], t[0x69], t[0x6A], t[0x6B] = aOK|aImmZ, mrm|aImmZ, aOK|aImm8, mrm|aImm8
	for op := 0x70; op < 0x80; op++ { // Jcc rel8
		t[op] = aOK | aRel8
	}
	t[0x80], t[0x81], t[0x83] = mrm|aImm8, mrm|aImmZ, mrm|aImm8
	for op := 0x84; op < 0x8C; op++ { // TEST, XCHG, MOV
		t[op] = mrm
	}
	t[0x8D] = mrm | aMemOnly          // LEA
	t[0x8F] = mrm | aReg0             // POP r/m
	for op := 0x90; op < 0x98; op++ { // NOP, XCHG, PAUSE (F3 90)
		t[op] = aOK
	}
	t[0x98], t[0x99], t[0x9C], t[0x9D] = aOK, aOK, aOK, aOK // CDQE CQO PUSHF POPF
	for _, op := range []int{0xA4, 0xA5, 0xA6, 0xA7, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF} {
		t[op] = aOK | aString
	}
	t[0xA8], t[0xA9] = aOK|aImm8, aOK|aImmZ
	for op := 0xB0; op < 0xB8; op++ {
		t[op], t[op+8] = aOK|aImm8, aOK|aImmV
	}
	t[0xC0], t[0xC1] = mrm|aImm8|aGroup, mrm|aImm8|aGroup // shifts
	t[0xC3] = aOK                                         // RET
	t[0xC6], t[0xC7] = mrm|aImm8|aReg0, mrm|aImmZ|aReg0   // MOV r/m, imm
	t[0xC9] = aOK                                         // LEAVE
	t[0xCC] = aOK                                         // INT3
	t[0xD0], t[0xD1], t[0xD2], t[0xD3] = mrm|aGroup, mrm|aGroup, mrm|aGroup, mrm|aGroup
	t[0xE8], t[0xE9], t[0xEB] = aOK|aRel32, aOK|aRel32, aOK|aRel8 // CALL, JMP
	t[0xF5], t[0xF8], t[0xF9], t[0xFC], t[0xFD] = aOK, aOK, aOK, aOK, aOK
	t[0xF6], t[0xF7] = mrm|aGroup, mrm|aGroup // TEST imm, NOT, NEG, MUL, DIV...
	t[0xFE], t[0xFF] = mrm|aGroup, mrm|aGroup // INC, DEC; CALL, JMP, PUSH
	return t
}()

// twoByte describes the 0F map: the SSE, CMOVcc, SETcc, Jcc rel32, bit and exchange
// instructions Go emits, each with the mandatory prefixes under which x86asm decodes it.
var twoByte = func() (t [256]uint16) {
	set := func(a uint16, ops ...int) {
		for _, op := range ops {
			t[op] = a
		}
	}
	span := func(a uint16, lo, hi int) {
		for op := lo; op <= hi; op++ {
			t[op] = a
		}
	}
	set(aOK|pN, 0x05, 0x31, 0x77, 0xA2) // SYSCALL RDTSC EMMS CPUID
	set(mrm|pAll, 0x10, 0x11)           // MOVUPS MOVUPD MOVSS MOVSD
	set(mrm|pNO, 0x12, 0x14, 0x15, 0x16, 0x28, 0x29, 0x2E, 0x2F)
	set(mrm|aMemOnly|pNO, 0x13, 0x17)  // MOVLPS MOVHPS stores
	set(mrm|aMemOnly|pN, 0x18)         // PREFETCHh (reg 0-3, checked below)
	set(mrm|aReg0|pNO, 0x1F)           // NOP r/m
	set(mrm|pF3|pF2, 0x2A, 0x2C, 0x2D) // CVTSI2Sx CVTTSx2SI CVTSx2SI
	span(mrm|pNO, 0x40, 0x4F)          // CMOVcc
	set(mrm|pAll, 0x51, 0x58, 0x59, 0x5A, 0x5C, 0x5D, 0x5E, 0x5F)
	set(mrm|pNO, 0x54, 0x55, 0x56, 0x57) // ANDPS ANDNPS ORPS XORPS
	span(mrm|pNO, 0x60, 0x6B)            // PUNPCK, PACK, PCMPGT
	set(mrm|p66, 0x6C, 0x6D)             // PUNPCKLQDQ PUNPCKHQDQ
	set(mrm|pNO, 0x6E, 0x74, 0x75, 0x76)
	set(mrm|pN|p66|pF3, 0x6F, 0x7E, 0x7F) // MOVQ MOVDQA MOVDQU
	set(mrm|aImm8|pAll, 0x70)             // PSHUFW PSHUFD PSHUFHW PSHUFLW
	span(aOK|aRel32, 0x80, 0x8F)          // Jcc rel32
	span(mrm|pN, 0x90, 0x9F)              // SETcc
	set(mrm|pNO, 0xA3, 0xA5, 0xAB, 0xAD, 0xAF, 0xB0, 0xB1, 0xB3, 0xB6, 0xB7, 0xBB, 0xBE, 0xBF, 0xC0, 0xC1)
	set(mrm|aImm8|pNO, 0xA4, 0xAC, 0xC6) // SHLD SHRD SHUFPS
	set(mrm|aImm8|aGroup|pNO, 0xBA)      // BT/BTS/BTR/BTC imm8 (reg 4-7)
	set(mrm|pF3, 0xB8)                   // POPCNT
	set(mrm|pN|p66|pF3, 0xBC, 0xBD)      // BSF BSR TZCNT LZCNT
	set(mrm|aImm8|pAll, 0xC2)            // CMPPS CMPPD CMPSS CMPSD
	span(aOK|pN, 0xC8, 0xCF)             // BSWAP
	span(mrm|pNO, 0xD1, 0xD5)
	set(mrm|p66, 0xD6) // MOVQ xmm/m64, xmm
	span(mrm|pNO, 0xD8, 0xE5)
	set(mrm|p66|pF3|pF2, 0xE6) // CVTxx2PD/DQ
	span(mrm|pNO, 0xE8, 0xEF)
	span(mrm|pNO, 0xF1, 0xF6)
	span(mrm|pNO, 0xF8, 0xFE)
	return t
}()

// length decodes the instruction at the start of b: its length, how it passes control
// on, and for a direct branch or call its displacement (relative to the instruction's
// end). ok is false when the instruction is not one this table knows exactly, or is
// cut short by the end of b: the caller must then decode it some other way.
func length(b []byte) (n int, flow flowKind, rel int32, ok bool) {
	if n := plainLength(b); n > 0 {
		return n, flowNext, 0, true
	}
	i := 0
	var n66, rep int // 66 prefixes; F2 or F3 seen (the byte)
	rex := byte(0)
prefixes:
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x66:
			n66++
		case c == 0xF2 || c == 0xF3:
			if rep != 0 {
				return 0, 0, 0, false
			}
			rep = int(c)
		case c&0xF0 == 0x40:
			rex = c
			i++
			break prefixes
		default:
			break prefixes
		}
	}
	if i >= len(b) || i > 4 {
		return 0, 0, 0, false
	}
	op := b[i]
	if rex != 0 && (op == 0x66 || op == 0xF2 || op == 0xF3 || op&0xF0 == 0x40) {
		return 0, 0, 0, false // a prefix after REX: REX is then ignored; leave it to x86asm
	}
	i++
	var a uint16
	prefixed := n66 > 0 || rep != 0
	if op != 0x0F {
		a = oneByte[op]
		if a == 0 || rep != 0 && a&aString == 0 && !(op == 0x90 && rep == 0xF3 && n66 == 0) {
			return 0, 0, 0, false
		}
	} else {
		if i >= len(b) {
			return 0, 0, 0, false
		}
		op2 := b[i]
		i++
		a = twoByte[op2]
		if a == 0 || n66 > 1 || n66 > 0 && rep != 0 {
			return 0, 0, 0, false
		}
		if a&aRel32 == 0 {
			need := pN
			switch {
			case n66 > 0:
				need = p66
			case rep == 0xF3:
				need = pF3
			case rep == 0xF2:
				need = pF2
			}
			if a&need == 0 {
				return 0, 0, 0, false
			}
		}
		switch {
		case a&aRel32 != 0:
			op = 0x84 // Jcc rel32: handled with the one-byte branches below
			flow = flowJcc
		case op2 == 0x1F && rex&8 != 0:
			return 0, 0, 0, false // x86asm refuses NOP with REX.W
		case op2 == 0x18:
			if len(b) > i && b[i]>>3&7 > 3 {
				return 0, 0, 0, false // hint NOPs, not PREFETCHh
			}
			op = 0
		case op2 == 0xBA:
			if len(b) > i && b[i]>>3&7 < 4 {
				return 0, 0, 0, false
			}
			op = 0
		default:
			op = 0 // no one-byte special case applies
		}
		if a&aRel32 == 0 {
			a &^= aGroup
		}
	}

	// Control transfers: the plain encodings only, without prefixes (REX allowed on the
	// indirect ones through the FF group below).
	if a&(aRel8|aRel32) != 0 {
		if prefixed || rex != 0 {
			return 0, 0, 0, false
		}
		if a&aRel8 != 0 {
			if i+1 > len(b) {
				return 0, 0, 0, false
			}
			rel = int32(int8(b[i]))
			i++
		} else {
			if i+4 > len(b) {
				return 0, 0, 0, false
			}
			rel = int32(uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24)
			i += 4
		}
		switch {
		case flow == flowJcc:
		case op >= 0x70 && op <= 0x7F:
			flow = flowJcc
		case op == 0xE8:
			flow = flowCall
		default:
			flow = flowJmp
		}
		return i, flow, rel, true
	}
	switch op {
	case 0xC3, 0xCC:
		if prefixed || rex != 0 {
			return 0, 0, 0, false
		}
		if op == 0xC3 {
			return i, flowRet, 0, true
		}
		return i, flowTrap, 0, true
	}

	imm := 0
	switch {
	case a&aImm8 != 0:
		imm = 1
	case a&aImmZ != 0:
		imm = 4
		if n66 > 0 && rex&8 == 0 {
			imm = 2
		}
	case a&aImmV != 0:
		imm = 4
		if rex&8 != 0 {
			imm = 8
		} else if n66 > 0 {
			imm = 2
		}
	}
	if a&aModRM != 0 {
		if i >= len(b) {
			return 0, 0, 0, false
		}
		modrm := b[i]
		mod, reg, rm := modrm>>6, modrm>>3&7, modrm&7
		i++
		if a&aMemOnly != 0 && mod == 3 || a&aReg0 != 0 && reg != 0 {
			return 0, 0, 0, false
		}
		if a&aGroup != 0 {
			switch op {
			case 0xC0, 0xC1, 0xD0, 0xD1, 0xD2, 0xD3:
				if reg == 6 {
					return 0, 0, 0, false // SAL alias: x86asm's business
				}
			case 0xF6, 0xF7:
				switch reg {
				case 0: // TEST r/m, imm
					imm = 1
					if op == 0xF7 {
						imm = 4
						if n66 > 0 && rex&8 == 0 {
							imm = 2
						}
					}
				case 1:
					return 0, 0, 0, false // TEST alias
				}
			case 0xFE:
				if reg > 1 {
					return 0, 0, 0, false
				}
			case 0xFF:
				switch reg {
				case 0, 1, 6: // INC DEC PUSH
				case 2, 4: // CALL, JMP r/m64
					if prefixed {
						return 0, 0, 0, false
					}
					flow = flowCallInd
					if reg == 4 {
						flow = flowJmpInd
					}
				default:
					return 0, 0, 0, false
				}
			}
		}
		if mod != 3 && rm == 4 && i >= len(b) {
			return 0, 0, 0, false // the SIB byte is cut off
		}
		i += addressLen(modrm, b[i:])
	} else if n66 > 0 && op >= 0x50 && op <= 0x5F {
		return 0, 0, 0, false // PUSH/POP r16: rare, leave it to x86asm
	}
	i += imm
	if i > len(b) || i > maxInstLen {
		return 0, 0, 0, false
	}
	return i, flow, 0, true
}

// plainLength is length's fast path for most of Go's code: an optional REX, then a
// one-byte opcode whose table entry is a ModRM and at most an immediate (MOV, the ALU
// ops, TEST, IMUL, MOVSXD, the 80-83 group), no other prefix. It returns 0 for
// anything else, which the general path then reads; where it answers, it answers as
// the general path would.
func plainLength(b []byte) int {
	if len(b) < maxInstLen {
		return 0
	}
	i := 0
	if b[0]&0xF0 == 0x40 {
		i = 1
	}
	a := oneByte[b[i]]
	if a&^(aImm8|aImmZ) != mrm {
		return 0
	}
	n := i + 2 + addressLen(b[i+1], b[i+2:])
	switch {
	case a&aImm8 != 0:
		n++
	case a&aImmZ != 0:
		n += 4
	}
	return n
}

// addressLen is how many bytes of SIB and displacement follow a ModRM byte; after
// holds them (only its first byte is read: the SIB's base).
func addressLen(modrm byte, after []byte) int {
	mod, rm, n := modrm>>6, modrm&7, 0
	if mod == 3 {
		return 0
	}
	if rm == 4 { // SIB
		if mod == 0 && after[0]&7 == 5 {
			n += 4 // no base: disp32
		}
		n++
	}
	switch {
	case mod == 1:
		n++
	case mod == 2, mod == 0 && rm == 5: // disp32, or RIP-relative
		n += 4
	}
	return n
}
