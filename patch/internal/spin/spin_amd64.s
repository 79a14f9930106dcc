#include "textflag.h"

// func WhileLess(addr *uint32, v uint32, iters uint64) uint32
TEXT ·WhileLess(SB), NOSPLIT|NOFRAME, $0-28
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
