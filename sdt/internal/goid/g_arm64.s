#include "textflag.h"

// func G() uintptr
TEXT ·G(SB),NOSPLIT,$0-8
	MOVD	g, R0
	MOVD	R0, ret+0(FP)
	RET
