package arm64

// The checks of the encodings whose validity a mask cannot say (form), from the
// ARM ARM's decode pseudocode: a word that fails its row's check is no instruction of
// that row, and the next row is tried.

// check reports whether w is an instruction of a row of form f, and for the
// single-register loads and stores the effect on Rt.
func (f form) check(w uint32) (fx, bool) {
	q := w >> 30 & 1
	size := w >> 22 & 3 // the vector instructions' size field
	imm5 := w >> 16 & 31
	switch f {
	case formPlain:
		return 0, true
	case formNot11:
		return 0, w>>30 != 3
	case formLogImm:
		sf := w >> 31
		n, immr, imms := w>>22&1, w>>16&63, w>>10&63
		_, ok := bitMask(sf, n, immr, imms)
		return 0, ok
	case formLogShift:
		return 0, w>>31 == 1 || w&(1<<15) == 0
	case formAddShift:
		return 0, w>>22&3 != 3 && (w>>31 == 1 || w&(1<<15) == 0)
	case formAddExt:
		return 0, w>>10&7 <= 4
	case formLdSt:
		return ldst(w)
	case formMulti:
		switch w >> 12 & 15 {
		case 0b0010, 0b0110, 0b0111, 0b1010: // LD1/ST1, 1 to 4 registers
			return 0, true
		case 0b0000, 0b0100, 0b1000: // LD4, LD3, LD2: no 1D
			return 0, w>>10&3 != 3 || q == 1
		}
		return 0, false
	case formSingle:
		s, sz := w>>12&1, w>>10&3
		switch w >> 14 & 3 { // scale
		case 0: // B
			return 0, true
		case 1: // H
			return 0, sz&1 == 0
		case 2: // S, D
			return 0, sz == 0 || sz == 1 && s == 0
		}
		return 0, w&(1<<22) != 0 && s == 0 // LDnR: loads only
	case formFP1:
		op, ftype := w>>15&63, w>>22&3
		switch {
		case op <= 3: // FMOV, FABS, FNEG, FSQRT
			return 0, true
		case op>>2 == 1: // FCVT into S, D or H
			return 0, op&3 != ftype && op&3 != 2
		case op>>3 == 1: // FRINT{N,P,M,Z,A,X,I}
			return 0, op != 0b001101
		}
		return 0, false
	case formFP2:
		return 0, w>>12&15 <= 8
	case formSzQ:
		return 0, size != 3 || q == 1
	case formSz3:
		return 0, size != 3
	case formAcross:
		return 0, size != 3 && (size != 2 || q == 1)
	case formPmull:
		return 0, size == 0 || size == 3
	case formShift:
		immh := w >> 19 & 15
		return 0, immh != 0 && (immh < 8 || q == 1)
	case formExt:
		return 0, q == 1 || w&(1<<14) == 0
	case formDup:
		return 0, imm5&15 != 0 && (imm5&15 != 8 || q == 1)
	case formSMOV:
		if q == 0 {
			return 0, imm5&3 != 0 // B, H into W
		}
		return 0, imm5&7 != 0 // B, H, S into X
	case formUMOV:
		if q == 0 {
			return 0, imm5&7 != 0 // B, H, S into W
		}
		return 0, imm5&15 == 8 // D into X
	}
	return 0, false
}

// ldst checks a single-register load or store (unscaled, post-index, unprivileged,
// pre-index, unsigned offset, register offset) by its size, V and opc, and returns
// what it does to Rt: a store reads it, a load writes it; a vector register or a
// prefetch's operation is none of the general registers.
func ldst(w uint32) (fx, bool) {
	size, opc := w>>30, w>>22&3
	indexed := w&(1<<24) == 0 && w&(1<<21) == 0
	unpriv := indexed && w>>10&3 == 2
	wback := indexed && w>>10&1 == 1
	if w&(1<<26) != 0 { // SIMD&FP: B, H, S, D; Q is size 00 with opc 1x
		return 0, (opc < 2 || size == 0) && !unpriv
	}
	switch {
	case opc == 0:
		return rd, true
	case opc == 1:
		return wd, true
	case size == 3 && opc == 2: // PRFM
		return 0, !unpriv && !wback
	case size >= 2 && opc == 3:
		return 0, false
	}
	return wd, true // LDRSB, LDRSH, LDRSW
}

// bitMask decodes the bit mask of a logical immediate (DecodeBitMasks): sf selects 64
// or 32 bits; ok is false for the reserved encodings.
func bitMask(sf, n, immr, imms uint32) (uint64, bool) {
	if sf == 0 && n == 1 {
		return 0, false
	}
	x := n<<6 | ^imms&63
	if x == 0 {
		return 0, false
	}
	length := 0
	for x>>(length+1) != 0 {
		length++
	}
	if length < 1 {
		return 0, false
	}
	levels := uint32(1)<<length - 1
	s, r := imms&levels, immr&levels
	if s == levels {
		return 0, false
	}
	esize := uint(1) << length
	elem := uint64(1)<<(s+1) - 1
	if r != 0 {
		elem = (elem>>r | elem<<(esize-uint(r))) & (uint64(1)<<esize - 1)
	}
	for e := esize; e < 64; e *= 2 {
		elem |= elem << e
	}
	if sf == 0 {
		elem &= 0xFFFFFFFF
	}
	return elem, true
}
