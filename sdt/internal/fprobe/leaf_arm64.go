package fprobe

import "encoding/binary"

// The leaf stub's layout (leaf_arm64.s): R0..R15, then F0..F15, a word each, then R26.
const (
	leafInts   = 16
	leafFloats = 16
	// leafSlotLen is a slot's size: MOVZ $i, R16; B leafStub; the displaced
	// instruction; B back.
	leafSlotLen = 16
)

// Defined in leaf_arm64.s.
func leafSlots()
func leafStub()
func leafBody()
func leafBack()
func leafAddrs() (slots, stub uintptr)

// leafSlotAddr is slot i's address.
func leafSlotAddr(i int) uintptr {
	slots, _ := leafAddrs()
	return slots + uintptr(i)*leafSlotLen
}

// branch is B from pc to target, false out of its ±128 MiB reach.
func branch(pc, target uintptr) (uint32, bool) {
	d := (int64(target) - int64(pc)) / 4
	if d < -(1<<25) || d >= 1<<25 {
		return 0, false
	}
	return 0x14000000 | uint32(d)&0x03FFFFFF, true
}

// leafSlotCode is slot i's code for leaf f, written at slot: MOVZ $i, R16; B
// leafStub; the displaced instruction (an ADRP, rel 1, re-encoded to take target's
// page from the slot); B to the instruction after it. nil out of reach.
func leafSlotCode(i int, slot uintptr, f *Func, rel int, target uint64) []byte {
	_, stub := leafAddrs()
	to, ok := branch(slot+4, stub)
	back, ok2 := branch(slot+12, f.entry.resume)
	if !ok || !ok2 || len(f.orig) != 4 || i >= 1<<16 {
		return nil
	}
	code := binary.LittleEndian.AppendUint32(nil, 0xD2800010|uint32(i)<<5)
	code = binary.LittleEndian.AppendUint32(code, to)
	code = append(code, f.orig...)
	if rel > 0 {
		d := int64(target>>12) - int64((slot+8)>>12)
		if d < -(1<<20) || d >= 1<<20 {
			return nil
		}
		w := binary.LittleEndian.Uint32(f.orig) &^ (3<<29 | 0x7FFFF<<5)
		w |= uint32(d)&3<<29 | uint32(d>>2)&0x7FFFF<<5
		binary.LittleEndian.PutUint32(code[8:], w)
	}
	return binary.LittleEndian.AppendUint32(code, back)
}

// leafJump is the word written at a leaf's entry: B slot.
func leafJump(site, slot uintptr, n int) []byte {
	b, ok := branch(site, slot)
	if !ok || n != 4 {
		return nil
	}
	return binary.LittleEndian.AppendUint32(nil, b)
}

// leafCtxtReg is the closure context register, R26, in arch.LeafEntry.LiveIn.
const leafCtxtReg = 26

// Returns by a jump (jret.go): a slot is MOVZ $i, R16; B jretStub.
const jretSlotLen = 8

// jretSlotCode is return slot i's code, written at slot; nil out of reach.
func jretSlotCode(i int, slot uintptr) []byte {
	_, stub := jretAddrs()
	to, ok := branch(slot+4, stub)
	if !ok || i >= 1<<16 {
		return nil
	}
	code := binary.LittleEndian.AppendUint32(nil, 0xD2800010|uint32(i)<<5)
	return binary.LittleEndian.AppendUint32(code, to)
}

// jretJump is the word written at a RET: B slot. nil out of reach.
func jretJump(site, slot uintptr, n int) []byte { return leafJump(site, slot, n) }

// punOpcode: no punned jumps here (arch.LeafEntry.Pun is amd64's).
const punOpcode = 0

// beforeRegs is which of the leaf stub's saved integer registers (R0..R15, slot r
// for Rr) the loads that ran in place wrote (arch.LeafEntry.Before).
func beforeRegs(before uint32) uint64 { return uint64(before) & (1<<leafInts - 1) }

// leafRegName names the integer register the leaf stub saves in slot r.
func leafRegName(r int) string { return "R" + itoa(r) }
