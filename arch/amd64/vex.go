package amd64

import "encoding/binary"

// VEX (C4, C5) and EVEX (62) encoded instructions: the AVX, AVX2, FMA, BMI and AVX-512
// code of the runtime's and crypto's assembly, and what the compiler emits for
// GOAMD64=v3 and up. Their length follows one rule (the prefix, the opcode, a ModRM
// with its SIB and displacement, an 8-bit immediate for the 0F 3A map and a few 0F
// opcodes); none transfers control. Which encodings exist is in vextab.go, a table
// of the forms x86asm (Intel's XED data) decodes: by map, opcode and pp, the vector
// lengths, W, register or memory operand and ModRM.reg values.

// vexImm8 reports whether a VEX or EVEX opcode of map m takes an 8-bit immediate.
func vexImm8(m, op uint8) bool {
	switch {
	case m == map0F3A:
		return true
	case m == map0F:
		switch op {
		case 0x70, 0x71, 0x72, 0x73, 0xC2, 0xC4, 0xC5, 0xC6:
			return true
		}
	}
	return false
}

// decodeVEX decodes the VEX or EVEX instruction at the start of b (its first byte C4,
// C5 or 62, no legacy prefix or REX before it) into in.
func decodeVEX(b []byte, in *inst) bool {
	var i int
	var pp, l, bcst, aaa uint8
	in.rex = 0x40
	switch b[0] {
	case 0xC5: // R vvvv L pp; map 0F, W0
		if len(b) < 3 {
			return false
		}
		p := b[1]
		in.enc, in.m = encVEX, map0F
		in.rex |= ^p >> 5 & 4
		in.vvvv, l, pp = ^p>>3&15, p>>2&1, p&3
		i = 2
	case 0xC4: // R X B mmmmm, W vvvv L pp
		if len(b) < 4 {
			return false
		}
		p1, p2 := b[1], b[2]
		in.enc, in.m = encVEX, p1&0x1F
		in.rex |= ^p1>>5&7 | p2>>4&8
		in.vvvv, l, pp = ^p2>>3&15, p2>>2&1, p2&3
		i = 3
	case 0x62: // R X B R' 0 0 mm, W vvvv 1 pp, z L'L b V' aaa
		if len(b) < 5 {
			return false
		}
		p0, p1, p2 := b[1], b[2], b[3]
		if p0&0x0C != 0 || p1&0x04 == 0 {
			return false // map 4-7 (APX, FP16) or a reserved bit: not decoded
		}
		in.enc, in.m = encEVEX, p0&3
		in.rex |= ^p0>>5&7 | p1>>4&8
		in.vvvv, l, pp = ^p1>>3&15|^p2<<1&16, p2>>5&3, p1&3
		bcst, aaa = p2>>4&1, p2&7
		i = 4
	}
	if in.m < map0F || in.m > map0F3A {
		return false
	}
	in.pfx = [4]uint8{0, p66, pF3, pF2}[pp]
	in.op = b[i]
	i++
	e, ok := lookup(vexOps[:], vexKey(in.enc, in.m, in.op, pp))
	if !ok {
		return false
	}
	w := in.rex >> 3 & 1
	if in.enc == encVEX && in.m == map0F && in.op == 0x77 { // VZEROUPPER, VZEROALL: no ModRM
		if !vexForm(in.enc, e, 0, l, w, 1, 0xFF) {
			return false
		}
		in.n = uint8(i)
		return true
	}
	if i >= len(b) {
		return false
	}
	in.hasRM, in.modrm = true, b[i]
	i++
	regForm := uint8(0)
	if in.mod() == 3 {
		regForm = 1
	}
	if !vexForm(in.enc, e, bcst, l, w, regForm, 1<<in.regDigit()) || in.enc == encEVEX && aaa == 0 && e&evexMasked != 0 {
		return false
	}
	if regForm == 0 && in.modrm&7 == 4 && i >= len(b) {
		return false
	}
	if in.mod() == 0 && in.modrm&7 == 5 && i+4 <= len(b) {
		in.rip = true
		in.disp = int32(binary.LittleEndian.Uint32(b[i:]))
	}
	i += addressLen(in.modrm, b[i:])
	if vexImm8(in.m, in.op) {
		if i >= len(b) {
			return false
		}
		in.immN, in.imm = 1, int64(int8(b[i]))
		i++
	}
	if i > len(b) || i > maxInstLen {
		return false
	}
	in.n = uint8(i)
	return true
}

// vexKey is the key of vextab.go's table: the encoding (VEX or EVEX), map, opcode and pp.
func vexKey(enc, m, op, pp uint8) uint32 {
	return uint32(enc-encVEX)<<12 | uint32(m)<<10 | uint32(op)<<2 | uint32(pp)
}

// evexMasked marks the EVEX entries of vexOps that x86asm decodes only with a mask
// register other than k0 (gathers and scatters).
const evexMasked = 0x100

// vexForm reports whether the form of entry e with the broadcast bit (EVEX.b, 0 for
// VEX), vector length, W, a register (1) or memory (0) operand in ModRM, and any of
// the ModRM.reg values in regs (a bit mask) is known.
func vexForm(enc uint8, e uint32, bcst, l, w, regForm, regs uint8) bool {
	if enc == encVEX {
		return bcst == 0 && l < 2 && uint8(vexPatterns[e&0xFF]>>(((l*2+w)*2+regForm)*8))&regs != 0
	}
	bit := (((bcst*4+l)*2+w)*2 + regForm) * 8
	return uint8(evexPatterns[e&0xFF][bit/64]>>(bit%64))&regs != 0
}

// lookup finds key in the high 16 bits of the sorted entries of t.
func lookup(t []uint32, key uint32) (uint32, bool) {
	i, j := 0, len(t)
	for i < j {
		h := int(uint(i+j) >> 1)
		if t[h]>>16 < key {
			i = h + 1
		} else {
			j = h
		}
	}
	if i < len(t) && t[i]>>16 == key {
		return t[i], true
	}
	return 0, false
}
