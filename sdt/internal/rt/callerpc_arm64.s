#include "textflag.h"

// func CallerPC() uintptr
TEXT ·CallerPC(SB), NOSPLIT|NOFRAME, $0-8
	MOVD 8(R29), R0
	MOVD R0, ret+0(FP)
	RET
