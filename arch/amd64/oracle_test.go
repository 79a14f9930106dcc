package amd64

import "golang.org/x/arch/x86/x86asm"

// The x86asm ops the tests name.
const (
	xNOP = x86asm.NOP
	xJE  = x86asm.JE
	xJNE = x86asm.JNE
	xMOV = x86asm.MOV
	xLEA = x86asm.LEA
)

// xdecode, xdecodeFunc and xflowOf are x86asm's readings, the oracle of the decoder.
var (
	xdecode     = decodeBytes
	xdecodeFunc = decodeFunc
	xflowOf     = flowOf
)

// xabsolute returns the displacement of x's memory operand if x86asm reads it as an
// absolute address ([disp32]: no base, no index).
func xabsolute(x xinst) (int32, bool) {
	for _, a := range x.Inst.Args {
		if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Index == 0 {
			return int32(m.Disp), true
		}
	}
	return 0, false
}
