package amd64

import (
	"encoding/binary"
	"strings"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/x86/x86asm"
)

// Arch is x86-64 as discovery uses it.
var Arch = arch.Arch{
	Name: "amd64", Machine: 62 /* EM_X86_64 */, ArgRegs: argRegNames(),
	Candidates: candidates, Follow: follow, GuardedCall: guardedCall, Walk: walk, Match: match, Seal: seal,
	NewCache: newCache, Jumps: jumps, CallBefore: callBefore, Calls: calls,
}

// abiRegs is Go's integer argument register order on amd64 (ABIInternal).
var abiRegs = [...]x86asm.Reg{x86asm.RAX, x86asm.RBX, x86asm.RCX, x86asm.RDI, x86asm.RSI, x86asm.R8, x86asm.R9, x86asm.R10, x86asm.R11}

// argRegNames names abiRegs as USDT argument specs do: "%rax".
func argRegNames() []string {
	names := make([]string, len(abiRegs))
	for i, r := range abiRegs {
		names[i] = "%" + strings.ToLower(r.String())
	}
	return names
}

// callBefore reads the CALL rel32 that ends at ret (Arch.CallBefore): Go calls
// functions with it, and the fire call's return address names a site.
func callBefore(m arch.Memory, ret uint64) (pc, target uint64, err error) {
	b := m.Read(ret-5, 5)
	if len(b) < 5 || b[0] != 0xE8 {
		return 0, 0, shapeErr(ret, "no CALL rel32 before the return address")
	}
	return ret - 5, ret + uint64(int64(int32(binary.LittleEndian.Uint32(b[1:])))), nil
}

func shapeErr(pc uint64, format string, args ...any) error {
	return arch.Errorf("amd64", pc, format, args...)
}
