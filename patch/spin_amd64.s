//go:build linux

#include "textflag.h"

// func spinWhileLess(addr *uint32, v uint32, iters uint64) uint32
TEXT ·spinWhileLess(SB), NOSPLIT|NOFRAME, $0-28
	MOVQ	addr+0(FP), AX
	MOVL	v+8(FP), BX
	MOVQ	iters+16(FP), CX
loop:
	MOVL	(AX), DX
	CMPL	DX, BX
	JAE	done
	TESTQ	CX, CX
	JZ	done
	PAUSE
	DECQ	CX
	JMP	loop
done:
	MOVL	DX, ret+24(FP)
	RET

// func serialize()
TEXT ·serialize(SB), NOSPLIT|NOFRAME, $0-0
	XORL	AX, AX
	XORL	CX, CX
	CPUID
	RET
