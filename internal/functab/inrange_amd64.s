#include "textflag.h"

// func firstInRange(b []byte, lo, span uint32) int
//
// SSE2 (every amd64 has it): four words a compare. A word w is in range when
// w-lo <= span unsigned, that is when (w-lo)^1<<31 > span^1<<31 is false signed.
TEXT ·firstInRange(SB), NOSPLIT, $0-40
	MOVQ	b_base+0(FP), SI
	MOVQ	b_len+8(FP), CX
	MOVL	lo+24(FP), AX
	MOVL	span+28(FP), DX
	XORL	$0x80000000, DX
	MOVQ	AX, X1
	PSHUFD	$0, X1, X1
	MOVQ	DX, X2
	PSHUFD	$0, X2, X2
	MOVL	$0x80000000, BX
	MOVQ	BX, X3
	PSHUFD	$0, X3, X3
	ANDQ	$~15, CX
	XORQ	DI, DI

loop:
	CMPQ	DI, CX
	JAE	done
	MOVOU	(SI)(DI*1), X0
	PSUBL	X1, X0
	PXOR	X3, X0
	PCMPGTL	X2, X0
	PMOVMSKB	X0, BX
	CMPL	BX, $0xffff
	JNE	done
	ADDQ	$16, DI
	JMP	loop

done:
	MOVQ	DI, ret+32(FP)
	RET
