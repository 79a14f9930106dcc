package amd64

import (
	"encoding/binary"

	"github.com/gosdt/gosdt/arch"
)

// Arch is x86-64 as discovery uses it.
var Arch = arch.Arch{
	Name: "amd64", Machine: 62, // EM_X86_64
	Candidates: candidates, Follow: follow, GuardedCall: guardedCall, Walk: walk, Match: match, Seal: seal,
	NewCache: newCache, Jumps: jumps, Sealed: sealed, Rejoins: rejoins, Uprobed: uprobed,
}

// FuncProbes is x86-64 as function probes read its functions (funcprobe.go).
var FuncProbes = arch.FuncProbes{Arch: &Arch, FuncEntry: funcEntry, FuncReturns: funcReturns, LeafEntry: leafEntry, RetJump: retJump, CallTo: CallTo}

// Offline is x86-64 as reading its binaries uses it.
var Offline = arch.Offline{
	Arch: &Arch, CallBefore: callBefore, Calls: calls, ProbeNOP: probeNOP, ArgsAt: argsAt,
	ArgRegs: []string{"%rax", "%rbx", "%rcx", "%rdi", "%rsi", "%r8", "%r9", "%r10", "%r11"}, // abiRegs by name
}

// abiRegs is Go's integer argument register order on amd64 (ABIInternal), by number.
var abiRegs = [...]int{rAX, rBX, rCX, rDI, rSI, 8, 9, 10, 11}

// callBefore reads the CALL rel32 that ends at ret (Offline.CallBefore): Go calls
// functions with it, and the fire call's return address names a site.
func callBefore(m arch.Memory, ret uint64) (pc, target uint64, err error) {
	b := m.Read(ret-5, 5)
	if len(b) < 5 || b[0] != 0xE8 {
		return 0, 0, shapeErr(ret, "no CALL rel32 before the return address")
	}
	return ret - 5, ret + uint64(int64(int32(binary.LittleEndian.Uint32(b[1:])))), nil
}

// shapeErr is not inlined: inlined at each of the decoder's and the matchers' many
// refusals, it made every program that imports sdt kilobytes larger, for calls made
// only when a candidate is refused.
//
//go:noinline
func shapeErr(pc uint64, format string, args ...any) error {
	return arch.Errorf("amd64", pc, format, args...)
}
