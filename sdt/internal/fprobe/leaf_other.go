//go:build !amd64 && !arm64

package fprobe

// No leaf slots here: leaves are refused (readLeaf says so).
const (
	leafInts    = 0
	leafFloats  = 0
	leafSlotLen = 0
)

func leafSlotAddr(i int) uintptr                                               { return 0 }
func leafSlotCode(i int, slot uintptr, f *Func, rel int, target uint64) []byte { return nil }
func leafJump(site, slot uintptr, n int) []byte                                { return nil }

const leafCtxtReg = 0

// No return slots here: returns by a jump are refused (readJumpRets says so).
const jretSlotLen = 0

func jretSlotAddr(i int) uintptr                { return 0 }
func jretSlotCode(i int, slot uintptr) []byte   { return nil }
func jretJump(site, slot uintptr, n int) []byte { return nil }

// punOpcode: no punned jumps here (arch.LeafEntry.Pun is amd64's).
const punOpcode = 0

func beforeRegs(before uint32) uint64 { return 0 }

func leafRegName(r int) string { return "R" + itoa(r) }
