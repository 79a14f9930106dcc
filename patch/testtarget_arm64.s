//go:build linux

#include "textflag.h"

// The site is the function's first instruction: B +16 over the code that returns 1, or NOP.

// func testTarget() uint64
TEXT ·testTarget(SB), NOSPLIT|NOFRAME, $0-8
	WORD	$0x14000004	// B +16; or NOP (d503201f)
	MOVD	$1, R0
	MOVD	R0, ret+0(FP)
	RET
	MOVD	ZR, ret+0(FP)
	RET

// func testTargetAddr() uintptr
TEXT ·testTargetAddr(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	$·testTarget(SB), R0
	MOVD	R0, ret+0(FP)
	RET
