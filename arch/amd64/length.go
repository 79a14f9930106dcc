package amd64

import "encoding/binary"

// The decoder of the instructions Go's compiler and assembler emit. Discovery walks
// each function that holds a site from its entry, to prove the site starts on an
// instruction boundary and to collect every branch target, and reads a few dozen
// instructions around the site to prove the sled safe: it needs each instruction's
// length, its control transfer, and (for the proofs) its opcode, ModRM, immediate and
// RIP-relative address, never a full disassembly. The tables answer in a few
// nanoseconds without allocating.
//
// It answers only for encodings it knows exactly, and says "unknown" for everything
// else (x87, I/O, system and far transfers, prefixes in unusual places, opcodes Go
// does not emit): an unknown instruction is a refusal of the site that needs it, never
// a guessed boundary. TestLengthAgreesWithX86asm checks it against x86asm on every
// instruction of real binaries, TestLengthExhaustive on every opcode under every
// prefix, FuzzLength on random bytes.

// maxInstLen is the architectural limit on the length of one instruction.
const maxInstLen = 15

// flowKind says how an instruction passes control on, as far as a function walk cares.
type flowKind uint8

const (
	flowNext    flowKind = iota // falls through to the next instruction
	flowJcc                     // conditional direct branch (Jcc, LOOPcc, JRCXZ)
	flowJmp                     // direct JMP
	flowCall                    // direct CALL
	flowJmpInd                  // indirect JMP: never falls through
	flowCallInd                 // indirect CALL
	flowRet                     // RET: never falls through
	flowTrap                    // INT3, UD2, HLT, far return: never falls through
)

// Legacy prefixes as inst.pfx records them. A VEX or EVEX prefix's pp field is
// recorded as the mandatory prefix it stands for (p66, pF3, pF2).
const (
	p66   uint8 = 1 << iota // operand size (or mandatory 66)
	pF3                     // REP, or mandatory F3
	pF2                     // REPNE, or mandatory F2
	pLock                   // LOCK
	pSeg                    // a segment override (64 FS, 65 GS, 2E, 36, 3E, 26)
)

// Encodings and opcode maps, as inst.enc and inst.m record them.
const (
	encLegacy uint8 = iota
	encVEX
	encEVEX

	mapOne  = 0 // the one-byte map
	map0F   = 1 // 0F xx
	map0F38 = 2 // 0F 38 xx
	map0F3A = 3 // 0F 3A xx
)

// inst is one instruction as the decoder read it.
type inst struct {
	n     uint8    // length in bytes
	flow  flowKind // how it passes control on
	enc   uint8    // encLegacy, encVEX, encEVEX
	m     uint8    // opcode map (VEX and EVEX: the map their prefix selects)
	op    byte     // the opcode byte in its map
	pfx   uint8    // legacy prefixes (p66 ...), or VEX/EVEX pp as the prefix it stands for
	rex   uint8    // REX (0x40 | W R X B); VEX/EVEX's W R X B in the same bits, not inverted
	vvvv  uint8    // VEX/EVEX: the extra register operand, not inverted
	modrm uint8    // the ModRM byte, if hasModRM
	immN  uint8    // bytes of immediate
	hasRM bool     // a ModRM byte follows the opcode
	rip   bool     // the memory operand is [RIP+disp]
	disp  int32    // rip: the displacement, from the instruction's end
	rel   int32    // a direct branch's or call's displacement, from the instruction's end
	imm   int64    // the immediate, sign-extended from imm8/16/32; MOV's imm64 as is
}

// mod, reg and rm are the ModRM fields; reg and rm with REX.R and REX.B.
func (in *inst) mod() uint8 { return in.modrm >> 6 }
func (in *inst) reg() int   { return int(in.modrm>>3&7) | int(in.rex>>2&1)<<3 }
func (in *inst) rm() int    { return int(in.modrm&7) | int(in.rex&1)<<3 }

// regDigit is ModRM.reg alone: the opcode extension of a group.
func (in *inst) regDigit() uint8 { return in.modrm >> 3 & 7 }

// w reports REX.W (VEX.W, EVEX.W).
func (in *inst) w() bool { return in.rex&8 != 0 }

// target is a direct branch's or call's destination, for the instruction at pc.
func (in *inst) target(pc uint64) uint64 { return pc + uint64(in.n) + uint64(int64(in.rel)) }

// mem is the address a RIP-relative memory operand names, for the instruction at pc.
func (in *inst) mem(pc uint64) uint64 { return pc + uint64(in.n) + uint64(int64(in.disp)) }

// quickLength is the short path of walk, which needs of an instruction only its
// length, how it passes control on, and a direct branch's or call's displacement (from
// the instruction's end). It answers for an instruction without legacy prefixes, an
// optional REX and an opcode of the one-byte or 0F map whose table entry says all (no
// group but the ALU immediates and the shifts, no mandatory prefix, no far or system
// transfer), 97% of Go's code; b holds maxInstLen bytes. It returns false for the
// rest, which decodeInst then reads; where it answers, it answers as decodeInst would
// (agree checks).
func quickLength(b []byte) (n int, flow flowKind, rel int32, ok bool) {
	i, rex := 0, byte(0)
	if b[0]&0xF0 == 0x40 {
		rex, i = b[0], 1
	}
	op := b[i]
	var a uint32
	if op == 0x0F {
		i++
		op = b[i]
		a = legacyMaps[map0F][op]
		switch {
		case a&aRel32 != 0: // Jcc rel32
			if rex != 0 {
				return 0, 0, 0, false
			}
			return i + 5, flowJcc, int32(binary.LittleEndian.Uint32(b[i+1:])), true
		case a&pN == 0 || op == 0x0B, a&aGroup != 0 && op != 0x1F:
			return 0, 0, 0, false
		case op == 0x1F && (rex&8 != 0 || b[i+1]>>3&7 != 0):
			return 0, 0, 0, false
		}
	} else {
		a = legacyMaps[mapOne][op]
		switch {
		case a == 0:
			return 0, 0, 0, false
		case a&(aRel8|aRel32) != 0, op == 0xC3, op == 0xCC:
			if rex != 0 {
				return 0, 0, 0, false
			}
			switch op {
			case 0xC3:
				return 1, flowRet, 0, true
			case 0xCC:
				return 1, flowTrap, 0, true
			case 0xE8:
				return 5, flowCall, int32(binary.LittleEndian.Uint32(b[1:])), true
			case 0xE9:
				return 5, flowJmp, int32(binary.LittleEndian.Uint32(b[1:])), true
			case 0xEB:
				return 2, flowJmp, int32(int8(b[1])), true
			}
			return 2, flowJcc, int32(int8(b[1])), true
		case a&aImm16 != 0, op == 0xCB, op == 0xF4:
			return 0, 0, 0, false // RET imm16, far RET, HLT
		case a&aGroup != 0:
			switch op {
			case 0x80, 0x81, 0x83:
			case 0xC0, 0xC1, 0xD0, 0xD1, 0xD2, 0xD3:
				if b[i+1]>>3&7 == 6 {
					return 0, 0, 0, false
				}
			default:
				return 0, 0, 0, false
			}
		}
	}
	n = i + 1
	if a&aModRM != 0 {
		modrm := b[n]
		mod := modrm >> 6
		if a&aMemOnly != 0 && mod == 3 || a&aRegOnly != 0 && mod != 3 || a&aReg0 != 0 && modrm>>3&7 != 0 {
			return 0, 0, 0, false
		}
		n += 1 + addressLen(modrm, b[n+1:])
	}
	switch {
	case a&aImm8 != 0:
		n++
	case a&aImmZ != 0:
		n += 4
	case a&aImmV != 0:
		n += 4
		if rex&8 != 0 {
			n += 4
		}
	}
	return n, flowNext, 0, true
}

// decodeInst decodes the instruction at the start of b into in, and reports whether
// it is one the decoder knows exactly (false also when b ends inside it).
func decodeInst(b []byte, in *inst) bool {
	*in = inst{}
	if len(b) == 0 {
		return false
	}
	if c := b[0]; c == 0xC4 || c == 0xC5 || c == 0x62 {
		return decodeVEX(b, in) // without prefixes: REX or a legacy prefix before them is #UD
	}
	i, n66 := 0, 0
prefixes:
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case 0x66:
			n66++
			in.pfx |= p66
		case 0xF2, 0xF3:
			if in.pfx&(pF2|pF3) != 0 {
				return false
			}
			in.pfx |= pF3
			if c == 0xF2 {
				in.pfx ^= pF3 | pF2
			}
		case 0xF0:
			if in.pfx&pLock != 0 {
				return false
			}
			in.pfx |= pLock
		case 0x64, 0x65, 0x2E, 0x3E, 0x26, 0x36:
			if in.pfx&pSeg != 0 {
				return false
			}
			in.pfx |= pSeg
		default:
			if c&0xF0 == 0x40 {
				in.rex = c
				i++
			}
			break prefixes
		}
	}
	if i >= len(b) || i > 4 {
		return false
	}
	op := b[i]
	i++
	if in.rex != 0 && (op == 0x66 || op == 0xF2 || op == 0xF3 || op == 0xF0 || op&0xF0 == 0x40 ||
		op == 0x64 || op == 0x65 || op == 0x2E || op == 0x3E || op == 0x26 || op == 0x36) {
		return false // a prefix after REX: REX is then ignored; not Go's code
	}
	if op == 0x0F {
		if i >= len(b) {
			return false
		}
		op = b[i]
		i++
		in.m = map0F
		if op == 0x38 || op == 0x3A {
			if i >= len(b) {
				return false
			}
			in.m = map0F38
			if op == 0x3A {
				in.m = map0F3A
			}
			op = b[i]
			i++
		}
	}
	in.op = op
	a := legacyMaps[in.m][op]
	if a == 0 {
		return false
	}
	rep := in.pfx & (pF2 | pF3)
	if in.m == mapOne {
		if rep != 0 && a&aString == 0 && !(op == 0x90 && rep == pF3 && n66 == 0) {
			return false
		}
	} else if a&aRel32 == 0 {
		// The mandatory prefix: F2 or F3 if present, else 66. 66 with F2 or F3 is
		// operand size only for CRC32; more than one 66 only in NOPs.
		crc := in.m == map0F38 && op&0xFE == 0xF0 && rep == pF2
		if n66 > 1 && !(in.m == map0F && op == 0x1F) || n66 > 0 && rep != 0 && !crc {
			return false
		}
		need := pN
		switch {
		case rep == pF3:
			need = pS
		case rep == pF2:
			need = pD
		case n66 > 0:
			need = pO
		}
		if a&need == 0 {
			return false
		}
	}
	if in.pfx&pLock != 0 && (a&aLock == 0 || rep != 0) {
		return false
	}

	// Direct control transfers: the plain encodings only, without any prefix but a
	// branch hint (2E, 3E) before a Jcc.
	if a&(aRel8|aRel32) != 0 {
		hint := in.pfx == pSeg && (b[0] == 0x2E || b[0] == 0x3E) && (in.m == map0F || op < 0x80)
		if in.pfx != 0 && !hint || in.rex != 0 {
			return false
		}
		switch {
		case a&aRel8 != 0:
			if i+1 > len(b) {
				return false
			}
			in.rel = int32(int8(b[i]))
			i++
		default:
			if i+4 > len(b) {
				return false
			}
			in.rel = int32(binary.LittleEndian.Uint32(b[i:]))
			i += 4
		}
		in.flow = flowJcc
		switch {
		case in.m == mapOne && op == 0xE8:
			in.flow = flowCall
		case in.m == mapOne && (op == 0xE9 || op == 0xEB):
			in.flow = flowJmp
		}
		in.n = uint8(i)
		return true
	}
	if in.m == mapOne {
		switch op {
		case 0xC2, 0xC3, 0xCA, 0xCB, 0xCC, 0xF4: // RET, far RET, INT3, HLT
			if in.pfx != 0 || in.rex != 0 {
				return false
			}
			in.flow = flowTrap
			if op == 0xC2 || op == 0xC3 {
				in.flow = flowRet
			}
		case 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x5B, 0x5C, 0x5D, 0x5E, 0x5F:
			if n66 > 0 {
				return false // PUSH/POP r16: rare, and x86asm's REX.W handling differs
			}
		}
	} else if in.m == map0F && op == 0x0B {
		in.flow = flowTrap // UD2
	}

	switch {
	case a&aImm8 != 0:
		in.immN = 1
	case a&aImmZ != 0:
		in.immN = 4
		if n66 > 0 && !in.w() {
			in.immN = 2
		}
	case a&aImmV != 0:
		in.immN = 4
		if in.w() {
			in.immN = 8
		} else if n66 > 0 {
			in.immN = 2
		}
	case a&aImm16 != 0:
		in.immN = 2
	}
	if a&aModRM != 0 {
		if i >= len(b) {
			return false
		}
		in.hasRM = true
		in.modrm = b[i]
		i++
		mod, reg := in.mod(), in.regDigit()
		if a&aMemOnly != 0 && mod == 3 || a&aRegOnly != 0 && mod != 3 || a&aReg0 != 0 && reg != 0 {
			return false
		}
		if in.pfx&pLock != 0 && mod == 3 {
			return false
		}
		if a&aGroup != 0 && !group(in, b[i:]) {
			return false
		}
		if mod != 3 && in.modrm&7 == 4 && i >= len(b) {
			return false // the SIB byte is cut off
		}
		k := addressLen(in.modrm, b[i:])
		if mod == 0 && in.modrm&7 == 5 && i+4 <= len(b) {
			in.rip = true
			in.disp = int32(binary.LittleEndian.Uint32(b[i:]))
		}
		i += k
	}
	if i+int(in.immN) > len(b) || i+int(in.immN) > maxInstLen {
		return false
	}
	switch in.immN {
	case 1:
		in.imm = int64(int8(b[i]))
	case 2:
		in.imm = int64(int16(binary.LittleEndian.Uint16(b[i:])))
	case 4:
		in.imm = int64(int32(binary.LittleEndian.Uint32(b[i:])))
	case 8:
		in.imm = int64(binary.LittleEndian.Uint64(b[i:]))
	}
	in.n = uint8(i + int(in.immN))
	return true
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

// Condition codes: the low nibble of Jcc, SETcc and CMOVcc.
const (
	ccE  = 0x4
	ccNE = 0x5
)

// legacy reports whether in is the legacy opcode op of map m.
func (in *inst) legacy(m, op uint8) bool { return in.enc == encLegacy && in.m == m && in.op == op }

// isNOP reports whether in is a NOP: 90 (without REX.B, which makes it XCHG, or F3,
// which makes it PAUSE) or 0F 1F /0, with any prefix the decoder accepts.
func (in *inst) isNOP() bool {
	return in.legacy(mapOne, 0x90) && in.rex&1 == 0 && in.pfx&pF3 == 0 || in.legacy(map0F, 0x1F)
}

// isJcc reports whether in is the Jcc (rel8 or rel32) of condition code cc.
func (in *inst) isJcc(cc uint8) bool {
	return in.flow == flowJcc && in.enc == encLegacy && (in.m == mapOne && in.op == 0x70|cc || in.m == map0F && in.op == 0x80|cc)
}
