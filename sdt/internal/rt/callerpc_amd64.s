#include "textflag.h"

// func CallerPC() uintptr
TEXT ·CallerPC(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ 8(BP), AX
	MOVQ AX, ret+0(FP)
	RET
