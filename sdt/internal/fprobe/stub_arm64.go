package fprobe

import (
	"unsafe"

	"github.com/gosdt/gosdt/arch/arm64"
)

// stub_arm64.s reads a config's nint and nflt at CFG_NINT and CFG_NFLT.
var (
	_ = [1]struct{}{}[unsafe.Offsetof(config{}.nint)-320]
	_ = [1]struct{}{}[unsafe.Offsetof(config{}.nflt)-328]
)

// The stubs (stub_arm64.s). They are assembly linked into the program, within a BL's
// reach of its text (checked when a call is encoded), and the runtime knows their
// frames; none is ever preempted asynchronously (assembly never is).
func entryStub()
func entryBody()
func retStub()
func retBody()
func retTail()

// stubAddrs returns the addresses the patched calls go to.
func stubAddrs() (entry, ret uintptr)

var host = &arm64.FuncProbes

// callLen is the length of the call written at a site, one BL: the stubs find the
// site's config by its return address, the site plus callLen.
const callLen = 4

// maxSpills is the most register arguments a function has: R0..R15, F0..F15.
const maxSpills = 32

// saveSlot is where the stubs keep argument register reg (arch.Spill.Reg): R0..R15,
// then F0..F15.
func saveSlot(reg uint8) (int, bool) {
	switch {
	case reg < 16:
		return int(reg), true
	case reg >= floatReg && reg < floatReg+16:
		return 16 + int(reg-floatReg), true
	}
	return 0, false
}

// returnRegs is how many words of results a return event carries: R0..R3.
const returnRegs = 4
