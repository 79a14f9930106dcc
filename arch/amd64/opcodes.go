package amd64

// The legacy opcode maps as the decoder knows them: which opcodes exist in 64-bit
// mode, what follows each (ModRM, immediate, branch displacement), under which
// mandatory prefixes an 0F-map opcode is known, and which take LOCK.

// Per-opcode attributes in the legacy tables below.
const (
	aModRM   uint32 = 1 << iota // a ModRM byte (and SIB, displacement) follows the opcode
	aImm8                       // an 8-bit immediate
	aImmZ                       // a 32-bit immediate, 16-bit with 66 (REX.W keeps 32)
	aImmV                       // B8+r: 32-bit immediate, 64-bit with REX.W, 16-bit with 66
	aImm16                      // a 16-bit immediate (RET imm16)
	aMemOnly                    // ModRM must name memory (mod != 3)
	aRegOnly                    // ModRM must name a register (mod == 3)
	aReg0                       // ModRM.reg must be 0
	aRel8                       // rel8 branch (no prefix)
	aRel32                      // rel32 branch or call (no prefix)
	aGroup                      // ModRM.reg decides: see group
	aString                     // string instruction: REP/REPNE prefixes allowed
	aLock                       // LOCK allowed with a memory operand (groups: see group)
	aOK                         // a known opcode (the zero entry is unknown)

	// Mandatory prefixes under which a 0F-map opcode is known, beside REX: none, 66,
	// F3, F2.
	pN
	pO // 66
	pS // F3
	pD // F2
)

const (
	mrm  = aOK | aModRM
	pAll = pN | pO | pS | pD
	pNO  = pN | pO
)

// oneByteMap describes the one-byte opcode map in 64-bit mode. Unknown entries (0) are
// prefixes, opcodes invalid in 64-bit mode, x87, I/O, segment moves, far transfers and
// ENTER/IRET.
func oneByteMap() (t [256]uint32) {
	for op := 0x00; op < 0x40; op += 8 { // ADD OR ADC SBB AND SUB XOR CMP
		t[op+0], t[op+1], t[op+2], t[op+3] = mrm, mrm, mrm, mrm
		t[op+4], t[op+5] = aOK|aImm8, aOK|aImmZ
		if op != 0x38 { // CMP writes no memory: not lockable
			t[op+0] |= aLock
			t[op+1] |= aLock
		}
	}
	for op := 0x50; op < 0x60; op++ { // PUSH, POP
		t[op] = aOK
	}
	t[0x63] = mrm // MOVSXD
	t[0x68], t[0x69], t[0x6A], t[0x6B] = aOK|aImmZ, mrm|aImmZ, aOK|aImm8, mrm|aImm8
	for op := 0x70; op < 0x80; op++ { // Jcc rel8
		t[op] = aOK | aRel8
	}
	t[0x80], t[0x81], t[0x83] = mrm|aImm8|aGroup|aLock, mrm|aImmZ|aGroup|aLock, mrm|aImm8|aGroup|aLock
	t[0x84], t[0x85] = mrm, mrm             // TEST
	t[0x86], t[0x87] = mrm|aLock, mrm|aLock // XCHG
	for op := 0x88; op < 0x8C; op++ {       // MOV
		t[op] = mrm
	}
	t[0x8D] = mrm | aMemOnly          // LEA
	t[0x8F] = mrm | aReg0             // POP r/m
	for op := 0x90; op < 0x98; op++ { // NOP, XCHG, PAUSE (F3 90)
		t[op] = aOK
	}
	for op := 0x98; op < 0xA0; op++ { // CDQE CQO PUSHF POPF SAHF LAHF
		t[op] = aOK
	}
	t[0x9A], t[0x9B] = 0, 0 // invalid in 64-bit mode, FWAIT
	for _, op := range []int{0xA4, 0xA5, 0xA6, 0xA7, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF} {
		t[op] = aOK | aString
	}
	t[0xA8], t[0xA9] = aOK|aImm8, aOK|aImmZ
	for op := 0xB0; op < 0xB8; op++ {
		t[op], t[op+8] = aOK|aImm8, aOK|aImmV
	}
	t[0xC0], t[0xC1] = mrm|aImm8|aGroup, mrm|aImm8|aGroup // shifts
	t[0xC2], t[0xC3] = aOK|aImm16, aOK                    // RET imm16, RET
	t[0xC6], t[0xC7] = mrm|aImm8|aReg0, mrm|aImmZ|aReg0   // MOV r/m, imm
	t[0xC9] = aOK                                         // LEAVE
	t[0xCA], t[0xCB] = aOK|aImm16, aOK                    // far RET
	t[0xCC], t[0xCD] = aOK, aOK|aImm8                     // INT3, INT imm8
	t[0xD0], t[0xD1], t[0xD2], t[0xD3] = mrm|aGroup, mrm|aGroup, mrm|aGroup, mrm|aGroup
	t[0xD7] = aOK                                                                   // XLAT
	t[0xE0], t[0xE1], t[0xE2], t[0xE3] = aOK|aRel8, aOK|aRel8, aOK|aRel8, aOK|aRel8 // LOOPcc, JRCXZ
	t[0xE8], t[0xE9], t[0xEB] = aOK|aRel32, aOK|aRel32, aOK|aRel8                   // CALL, JMP
	t[0xF4], t[0xF5] = aOK, aOK                                                     // HLT CMC
	t[0xF8], t[0xF9], t[0xFC], t[0xFD] = aOK, aOK, aOK, aOK                         // CLC STC CLD STD
	t[0xF6], t[0xF7] = mrm|aGroup|aLock, mrm|aGroup|aLock                           // TEST imm, NOT, NEG, MUL, DIV...
	t[0xFE], t[0xFF] = mrm|aGroup|aLock, mrm|aGroup|aLock                           // INC, DEC; CALL, JMP, PUSH
	return t
}

// twoByteMap describes the 0F map: the SSE, CMOVcc, SETcc, Jcc rel32, bit, exchange and
// system instructions Go emits, each with the mandatory prefixes under which x86asm
// decodes it.
func twoByteMap() (t [256]uint32) {
	set := func(a uint32, ops ...int) {
		for _, op := range ops {
			t[op] = a
		}
	}
	span := func(a uint32, lo, hi int) {
		for op := lo; op <= hi; op++ {
			t[op] = a
		}
	}
	set(aOK|pN, 0x05, 0x0B, 0x31, 0x77, 0xA2) // SYSCALL UD2 RDTSC EMMS CPUID
	set(mrm|aGroup|pN, 0x01)                  // RDTSCP, XGETBV (exact ModRM: see group)
	set(mrm|aMemOnly|aGroup|pN, 0x0D)         // PREFETCHW (reg 1)
	set(mrm|pAll, 0x10, 0x11)                 // MOVUPS MOVUPD MOVSS MOVSD
	set(mrm|pNO, 0x14, 0x15, 0x28, 0x29, 0x2E, 0x2F)
	set(mrm|pAll, 0x12)                     // MOVLPS MOVHLPS MOVLPD MOVSLDUP MOVDDUP
	set(mrm|pNO|pS, 0x16)                   // MOVHPS MOVLHPS MOVHPD MOVSHDUP
	set(mrm|aMemOnly|pNO, 0x13, 0x17, 0x2B) // MOVLPS MOVHPS stores, MOVNTPS
	set(mrm|aMemOnly|aGroup|pN, 0x18)       // PREFETCHh (reg 0-3)
	set(mrm|aReg0|aGroup|pNO, 0x1F)         // NOP r/m
	set(mrm|pS|pD, 0x2A, 0x2C, 0x2D)        // CVTSI2Sx CVTTSx2SI CVTSx2SI
	span(mrm|pNO, 0x40, 0x4F)               // CMOVcc
	set(mrm|aRegOnly|pNO, 0x50)             // MOVMSKPS MOVMSKPD
	set(mrm|pAll, 0x51, 0x58, 0x59, 0x5A, 0x5C, 0x5D, 0x5E, 0x5F)
	set(mrm|pNO, 0x54, 0x55, 0x56, 0x57) // ANDPS ANDNPS ORPS XORPS
	span(mrm|pNO, 0x60, 0x6B)            // PUNPCK, PACK, PCMPGT
	set(mrm|pO, 0x6C, 0x6D)              // PUNPCKLQDQ PUNPCKHQDQ
	set(mrm|pNO, 0x6E, 0x74, 0x75, 0x76)
	set(mrm|pN|pO|pS, 0x6F, 0x7E, 0x7F)                  // MOVQ MOVDQA MOVDQU
	set(mrm|aImm8|pAll, 0x70)                            // PSHUFW PSHUFD PSHUFHW PSHUFLW
	set(mrm|aImm8|aRegOnly|aGroup|pNO, 0x71, 0x72, 0x73) // PSRLW/PSRAW/PSLLW... by an immediate
	set(mrm|pO|pD, 0x7C, 0x7D)                           // HADDPD HADDPS HSUBPD HSUBPS
	span(aOK|aRel32, 0x80, 0x8F)                         // Jcc rel32
	span(mrm|pN, 0x90, 0x9F)                             // SETcc
	set(mrm|pNO, 0xA3, 0xAF, 0xB6, 0xB7, 0xBE, 0xBF)
	set(mrm|pNO|aLock, 0xAB, 0xB0, 0xB1, 0xB3, 0xBB, 0xC0, 0xC1) // BTS CMPXCHG BTR BTC XADD
	set(mrm|pNO, 0xA5, 0xAD)                                     // SHLD SHRD by CL
	set(mrm|aImm8|pNO, 0xA4, 0xAC, 0xC4, 0xC6)                   // SHLD SHRD PINSRW SHUFPS
	set(mrm|aGroup|pN, 0xAE)                                     // fences, LDMXCSR, STMXCSR, CLFLUSH...
	set(mrm|aImm8|aGroup|aLock|pNO, 0xBA)                        // BT/BTS/BTR/BTC imm8 (reg 4-7)
	set(mrm|pS, 0xB8)                                            // POPCNT
	set(mrm|pN|pO|pS, 0xBC, 0xBD)                                // BSF BSR TZCNT LZCNT
	set(mrm|aImm8|pAll, 0xC2)                                    // CMPPS CMPPD CMPSS CMPSD
	set(mrm|aMemOnly|pN, 0xC3)                                   // MOVNTI
	set(mrm|aImm8|aRegOnly|pNO, 0xC5)                            // PEXTRW
	set(mrm|aGroup|aLock|pNO, 0xC7)                              // CMPXCHG8B/16B, RDRAND
	span(aOK|pN, 0xC8, 0xCF)                                     // BSWAP
	set(mrm|pO|pD, 0xD0)                                         // ADDSUBPD ADDSUBPS
	span(mrm|pNO, 0xD1, 0xD5)
	set(mrm|pO, 0xD6)           // MOVQ xmm/m64, xmm
	set(mrm|aRegOnly|pNO, 0xD7) // PMOVMSKB
	span(mrm|pNO, 0xD8, 0xE5)
	set(mrm|pO|pS|pD, 0xE6)     // CVTxx2PD/DQ
	set(mrm|aMemOnly|pNO, 0xE7) // MOVNTQ MOVNTDQ
	span(mrm|pNO, 0xE8, 0xEF)
	set(mrm|aMemOnly|pD, 0xF0) // LDDQU
	span(mrm|pNO, 0xF1, 0xF6)
	set(mrm|aRegOnly|pNO, 0xF7) // MASKMOVQ MASKMOVDQU
	span(mrm|pNO, 0xF8, 0xFE)
	return t
}

// map38Map and map3AMap describe the three-byte maps 0F 38 and 0F 3A: SSSE3, SSE4, AES,
// SHA, CLMUL, CRC32, MOVBE and ADX. Every 0F 3A opcode takes an 8-bit immediate.
func map38Map() (t [256]uint32) {
	for op := 0x00; op <= 0x0B; op++ { // PSHUFB PHADDW ... PMULHRSW
		t[op] = mrm | pNO
	}
	for _, op := range []int{0x10, 0x14, 0x15, 0x17, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x28, 0x29, 0x2B,
		0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x37, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0x3E, 0x3F, 0x40, 0x41,
		0xDB, 0xDC, 0xDD, 0xDE, 0xDF} { // SSE4.1, PCMPGTQ, AES
		t[op] = mrm | pO
	}
	t[0x1C], t[0x1D], t[0x1E] = mrm|pNO, mrm|pNO, mrm|pNO // PABSB PABSW PABSD
	t[0x2A] = mrm | aMemOnly | pO                         // MOVNTDQA
	for op := 0xC8; op <= 0xCD; op++ {                    // SHA1NEXTE ... SHA256MSG2
		t[op] = mrm | pN
	}
	t[0xF0], t[0xF1] = mrm|aGroup|pN|pO|pD, mrm|aGroup|pN|pO|pD // MOVBE (memory only), CRC32 (F2)
	t[0xF6] = mrm | pO | pS                                     // ADCX ADOX
	return t
}

func map3AMap() (t [256]uint32) {
	for _, op := range []int{0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x14, 0x15, 0x16, 0x17, 0x20, 0x21, 0x22,
		0x40, 0x41, 0x42, 0x44, 0x60, 0x61, 0x62, 0x63, 0xDF} { // ROUNDxx BLENDxx PEXTRx PINSRx DPPx PCLMULQDQ PCMPxSTRx AESKEYGENASSIST
		t[op] = mrm | aImm8 | pO
	}
	t[0x0F] = mrm | aImm8 | pNO // PALIGNR
	t[0xCC] = mrm | aImm8 | pN  // SHA1RNDS4
	return t
}

//go:generate go test -run TestOpcodeMapsGenerated -update-opcodes .

// legacyMaps, the tables by opcode map (mapOne, map0F, map0F38, map0F3A), is what the
// functions above build, generated (opcodes_gen.go) so that no program builds it at
// its start: that code was about 6 KB in every traced program.
// TestOpcodeMapsGenerated checks it against buildLegacyMaps.

// buildLegacyMaps is legacyMaps as the functions above build them.
func buildLegacyMaps() [4][256]uint32 {
	return [4][256]uint32{oneByteMap(), twoByteMap(), map38Map(), map3AMap()}
}

// group checks a grouped opcode's ModRM (its reg field the opcode extension) and sets
// what depends on it: the immediate of TEST, an indirect transfer's flow, LOCK. after
// holds the bytes after the ModRM byte.
func group(in *inst, after []byte) bool {
	mod, reg := in.mod(), in.regDigit()
	lock := in.pfx&pLock != 0
	switch key := int(in.m)<<8 | int(in.op); key {
	case 0x080, 0x081, 0x083: // ADD OR ADC SBB AND SUB XOR CMP
		return !lock || reg != 7
	case 0x0C0, 0x0C1, 0x0D0, 0x0D1, 0x0D2, 0x0D3:
		return reg != 6 // SAL alias: x86asm does not decode it
	case 0x0F6, 0x0F7:
		switch reg {
		case 0: // TEST r/m, imm
			in.immN = 1
			if in.op == 0xF7 {
				in.immN = 4
				if in.pfx&p66 != 0 && !in.w() {
					in.immN = 2
				}
			}
			return !lock
		case 1:
			return false // TEST alias
		case 2, 3: // NOT NEG
			return true
		}
		return !lock // MUL IMUL DIV IDIV
	case 0x0FE:
		return reg <= 1
	case 0x0FF:
		switch reg {
		case 0, 1: // INC DEC
			return true
		case 6: // PUSH
			return !lock
		case 2, 4: // CALL, JMP r/m64
			if in.pfx != 0 {
				return false
			}
			in.flow = flowCallInd
			if reg == 4 {
				in.flow = flowJmpInd
			}
			return true
		}
		return false
	case 0x11F: // NOP r/m
		return !in.w() // x86asm refuses NOP with REX.W
	case 0x2F0, 0x2F1: // MOVBE, or CRC32 with F2
		return mod != 3 || in.pfx&pF2 != 0
	case 0x101: // 0F 01: RDTSCP, XGETBV
		return in.modrm == 0xF9 || in.modrm == 0xD0
	case 0x10D: // PREFETCHW
		return reg == 1
	case 0x118: // PREFETCHNTA, PREFETCHT0-2 (4-7: hint NOPs)
		return reg <= 3
	case 0x171, 0x172: // PSRLW PSRAW PSLLW (D, likewise)
		return reg == 2 || reg == 4 || reg == 6
	case 0x173: // PSRLQ PSRLDQ PSLLQ PSLLDQ: the DQ forms with 66 only
		return reg == 2 || reg == 6 || (reg == 3 || reg == 7) && in.pfx&p66 != 0
	case 0x1AE:
		if mod == 3 {
			return in.modrm == 0xE8 || in.modrm == 0xF0 || in.modrm == 0xF8 // LFENCE MFENCE SFENCE
		}
		return true // FXSAVE FXRSTOR LDMXCSR STMXCSR XSAVE XRSTOR XSAVEOPT CLFLUSH
	case 0x1BA: // BT BTS BTR BTC imm8
		return reg >= 4 && (!lock || reg != 4)
	case 0x1C7:
		switch {
		case reg == 1 && mod != 3: // CMPXCHG8B, CMPXCHG16B
			return true
		case reg == 6 && mod == 3: // RDRAND
			return !lock
		}
		return false
	}
	return false
}
