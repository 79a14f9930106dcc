package fprobe

import (
	"unsafe"

	"github.com/gosdt/gosdt/arch/amd64"
)

// stub_amd64.s reads a config's nint, nflt and live at CFG_NINT, CFG_NFLT, CFG_LIVE.
var (
	_ = [1]struct{}{}[unsafe.Offsetof(config{}.nint)-256]
	_ = [1]struct{}{}[unsafe.Offsetof(config{}.nflt)-264]
	_ = [1]struct{}{}[unsafe.Offsetof(config{}.live)-272]
)

// The stubs (stub_amd64.s). They are assembly linked into the program, so the runtime
// knows their frames; none is ever preempted asynchronously (assembly never is).
func entryStub()
func entryBody()
func retStub()
func retBody()

// stubAddrs returns the addresses the patched calls go to.
func stubAddrs() (entry, ret uintptr)

var host = &amd64.FuncProbes

// callLen is the length of the call written at a site: the stubs find the site's
// config by the call's return address, the site plus callLen.
const callLen = 5

// maxSpills is the most register arguments a function has: 9 integer, 15 float.
const maxSpills = 24

// saveSlot is where the stubs keep argument register reg (arch.Spill.Reg): the nine
// integer registers, then X0..X14.
func saveSlot(reg uint8) (int, bool) {
	switch {
	case reg < 9:
		return int(reg), true
	case reg >= floatReg && reg < floatReg+15:
		return 9 + int(reg-floatReg), true
	}
	return 0, false
}

// returnRegs is how many words of results a return event carries: AX, BX, CX, DI.
const returnRegs = 4
