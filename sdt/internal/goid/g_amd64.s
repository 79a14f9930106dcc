#include "textflag.h"

// func G() uintptr
TEXT ·G(SB),NOSPLIT,$0-8
	MOVQ	TLS, AX
	MOVQ	0(AX)(TLS*1), AX
	MOVQ	AX, ret+0(FP)
	RET
