//go:build race

#include "textflag.h"

// Atomics for the race detector's builds (atomic_race_amd64.go says why).

TEXT ·load64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), BX
	MOVQ 0(BX), AX
	MOVQ AX, ret+8(FP)
	RET

TEXT ·store64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), BX
	MOVQ v+8(FP), AX
	XCHGQ AX, 0(BX)
	RET

TEXT ·add64(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), BX
	MOVQ d+8(FP), AX
	LOCK
	XADDQ AX, 0(BX)
	RET

TEXT ·cas64(SB), NOSPLIT, $0-25
	MOVQ p+0(FP), BX
	MOVQ old+8(FP), AX
	MOVQ new+16(FP), CX
	LOCK
	CMPXCHGQ CX, 0(BX)
	SETEQ ret+24(FP)
	RET

TEXT ·loadPtr(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), BX
	MOVQ 0(BX), AX
	MOVQ AX, ret+8(FP)
	RET
