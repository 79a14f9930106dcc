//go:build linux

#include "textflag.h"

// The site is the function's first instruction, at the function's 32-byte alignment, so the
// 2-byte JMP/NOP toggle lies inside one aligned 8-byte word.

// func testTarget() uint64
TEXT ·testTarget(SB), NOSPLIT|NOFRAME, $0-8
	BYTE	$0xEB; BYTE $0x0A	// JMP +10, over the next 10 bytes; or NOP (66 90)
	MOVQ	$1, ret+0(FP)		// 9 bytes
	RET
	MOVQ	$0, ret+0(FP)
	RET

// func testTargetAddr() uintptr
TEXT ·testTargetAddr(SB), NOSPLIT|NOFRAME, $0-8
	LEAQ	·testTarget(SB), AX
	MOVQ	AX, ret+0(FP)
	RET
