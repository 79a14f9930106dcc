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

// func indexCMPBAVX2(b []byte) int
//
// indexCMPB, 32 positions at a time with AVX2, among i <= len(b)-38.
TEXT ·indexCMPBAVX2(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), BX
	MOVQ $0x80, AX
	MOVQ AX, X0
	VPBROADCASTB X0, Y0
	MOVQ $0x3D, AX
	MOVQ AX, X1
	VPBROADCASTB X1, Y1
	VPXOR Y2, Y2, Y2
	XORQ DI, DI
	SUBQ $38, BX
loop:
	CMPQ DI, BX
	JGT  notfound
	VMOVDQU (SI)(DI*1), Y3
	VMOVDQU 1(SI)(DI*1), Y4
	VMOVDQU 6(SI)(DI*1), Y5
	VPCMPEQB Y0, Y3, Y3
	VPCMPEQB Y1, Y4, Y4
	VPCMPEQB Y2, Y5, Y5
	VPAND Y4, Y3, Y3
	VPAND Y5, Y3, Y3
	VPMOVMSKB Y3, DX
	TESTL DX, DX
	JNZ  found
	ADDQ $32, DI
	JMP  loop
found:
	VZEROUPPER
	BSFL DX, DX
	ADDQ DX, DI
	MOVQ DI, ret+24(FP)
	RET
notfound:
	VZEROUPPER
	NOTQ DI
	MOVQ DI, ret+24(FP)
	RET
