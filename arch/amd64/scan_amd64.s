#include "textflag.h"

// func indexCMPBAVX2(b []byte) int
//
// The first i with b[i] == 0x80, b[i+1] == 0x3D and b[i+6] == 0 among i <= len(b)-38,
// 32 positions at a time with AVX2; else -1-n, where n is the first position it did
// not look at.
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
