#include "textflag.h"

// func indexCMPB(b []byte) int
//
// The first i with b[i] == 0x80, b[i+1] == 0x3D and b[i+6] == 0 among i <= len(b)-22,
// 16 positions at a time with SSE2 (always present on amd64); else -1-n, where n is the
// first position it did not look at.
TEXT ·indexCMPB(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), BX
	MOVQ $0x8080808080808080, AX
	MOVQ AX, X0
	PUNPCKLQDQ X0, X0
	MOVQ $0x3D3D3D3D3D3D3D3D, AX
	MOVQ AX, X1
	PUNPCKLQDQ X1, X1
	PXOR X2, X2
	XORQ DI, DI
	SUBQ $22, BX
loop:
	CMPQ DI, BX
	JGT  notfound
	MOVOU (SI)(DI*1), X3
	MOVOU 1(SI)(DI*1), X4
	MOVOU 6(SI)(DI*1), X5
	PCMPEQB X0, X3
	PCMPEQB X1, X4
	PCMPEQB X2, X5
	PAND X4, X3
	PAND X5, X3
	PMOVMSKB X3, DX
	TESTL DX, DX
	JNZ  found
	ADDQ $16, DI
	JMP  loop
found:
	BSFL DX, DX
	ADDQ DX, DI
	MOVQ DI, ret+24(FP)
	RET
notfound:
	NOTQ DI
	MOVQ DI, ret+24(FP)
	RET
