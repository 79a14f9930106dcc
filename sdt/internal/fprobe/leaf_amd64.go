package fprobe

import (
	"encoding/binary"
)

// The leaf stub's layout (leaf_amd64.s): the nine integer argument registers, then
// X0..X14, a word each, then DX.
const (
	leafInts   = 9
	leafFloats = 15
	// leafSlotLen is a slot's size: MOVL $i, R12 (6 bytes); JMP leafStub (5); the
	// displaced instruction (at most 15); JMP back (5); INT3 to the end.
	leafSlotLen = 32
	leafSlotRun = 11 // where the displaced instruction starts in a slot
)

// Defined in leaf_amd64.s.
func leafSlots()
func leafStub()
func leafBody()
func leafAddrs() (slots, stub uintptr)

// leafSlotAddr is slot i's address.
func leafSlotAddr(i int) uintptr {
	slots, _ := leafAddrs()
	return slots + uintptr(i)*leafSlotLen
}

// rel32 is the displacement of a 5-byte jump at pc to target, false out of reach.
func rel32(pc, target uintptr) ([]byte, bool) {
	d := int64(target) - int64(pc+5)
	if d != int64(int32(d)) {
		return nil, false
	}
	return binary.LittleEndian.AppendUint32([]byte{0xE9}, uint32(int32(d))), true
}

// leafSlotCode is slot i's code for leaf f, written at slot: MOVL $i, R12; JMP
// leafStub; the displaced instruction (a RIP-relative one's disp32, at byte rel-1,
// re-encoded to name target from the slot); JMP to the instruction after it. nil out
// of reach.
func leafSlotCode(i int, slot uintptr, f *Func, rel int, target uint64) []byte {
	_, stub := leafAddrs()
	code := binary.LittleEndian.AppendUint32([]byte{0x41, 0xBC}, uint32(i))
	j, ok := rel32(slot+6, stub)
	if !ok || len(f.orig) > 15 {
		return nil
	}
	code = append(code, j...)
	code = append(code, f.orig...)
	if rel > 0 {
		d := int64(target) - int64(slot+leafSlotRun+uintptr(len(f.orig)))
		if d != int64(int32(d)) || rel+3 > len(f.orig) {
			return nil
		}
		binary.LittleEndian.PutUint32(code[leafSlotRun+rel-1:], uint32(int32(d)))
	}
	back, ok := rel32(slot+uintptr(len(code)), f.entry.resume)
	if !ok {
		return nil
	}
	code = append(code, back...)
	for len(code) < leafSlotLen {
		code = append(code, 0xCC)
	}
	return code
}

// leafJump is the n bytes written at a leaf's entry: JMP slot, then INT3 over the rest
// of the displaced instruction (nothing jumps there: the slot returns past it).
func leafJump(site, slot uintptr, n int) []byte {
	j, ok := rel32(site, slot)
	if !ok || n < 5 {
		return nil
	}
	for len(j) < n {
		j = append(j, 0xCC)
	}
	return j
}

// punOpcode is the byte written over a leaf's short first instruction: JMP rel32,
// whose displacement is the 4 bytes after it (arch.LeafEntry.Pun).
const punOpcode = 0xE9

// beforeRegs is which of the leaf stub's saved integer registers (leafSpills: AX BX
// CX DI SI R8 R9 R10 R11) the loads that ran in place wrote, from
// arch.LeafEntry.Before's register numbers (DX, the context, is leafCtxtReg's).
func beforeRegs(before uint32) uint64 {
	var m uint64
	for slot, r := range [leafInts]uint{0, 3, 1, 7, 6, 8, 9, 10, 11} {
		m |= uint64(before>>r&1) << slot
	}
	return m
}

// leafRegName names the integer register the leaf stub saves in slot r.
func leafRegName(r int) string {
	return [leafInts]string{"AX", "BX", "CX", "DI", "SI", "R8", "R9", "R10", "R11"}[r%leafInts]
}

// leafCtxtReg is the closure context register (DX) in arch.LeafEntry.LiveIn's
// numbering; unused: amd64's decoder gives no LiveIn.
const leafCtxtReg = 2

// Returns by a jump (jret.go): a slot is MOVL $i, R12 (6 bytes); JMP jretStub (5);
// INT3 to the end.
const jretSlotLen = 16

// jretSlotCode is return slot i's code, written at slot; nil out of reach.
func jretSlotCode(i int, slot uintptr) []byte {
	_, stub := jretAddrs()
	code := binary.LittleEndian.AppendUint32([]byte{0x41, 0xBC}, uint32(i))
	j, ok := rel32(slot+6, stub)
	if !ok {
		return nil
	}
	code = append(code, j...)
	for len(code) < jretSlotLen {
		code = append(code, 0xCC)
	}
	return code
}

// jretJump is the n bytes written at a return: JMP slot (n is 5: the RET and 4 bytes of
// the linker's padding). nil out of reach.
func jretJump(site, slot uintptr, n int) []byte {
	j, ok := rel32(site, slot)
	if !ok || n != 5 {
		return nil
	}
	return j
}
