#include "textflag.h"

// func indexLoadAVX2(b []byte) int
//
// The first i in 8 <= i <= len(b)-32 with b[i] == 0x39, b[i-1]&0xC0 == 0x40, and
// b[i-4]&0x9F == 0x90 or b[i-4] == 0x91 and b[i-8]&0x9F == 0x90, 32 positions at a
// time with AVX2; else -1-n, where n is the first position it did not look at.
TEXT ·indexLoadAVX2(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), BX
	MOVQ $0x39, AX
	MOVQ AX, X0
	VPBROADCASTB X0, Y0
	MOVQ $0xC0, AX
	MOVQ AX, X1
	VPBROADCASTB X1, Y1
	MOVQ $0x40, AX
	MOVQ AX, X2
	VPBROADCASTB X2, Y2
	MOVQ $0x9F, AX
	MOVQ AX, X6
	VPBROADCASTB X6, Y6
	MOVQ $0x90, AX
	MOVQ AX, X7
	VPBROADCASTB X7, Y7
	MOVQ $0x91, AX
	MOVQ AX, X8
	VPBROADCASTB X8, Y8
	MOVQ $8, DI
	SUBQ $32, BX
loop:
	CMPQ DI, BX
	JGT  notfound
	VMOVDQU (SI)(DI*1), Y3     // LDRB's top byte
	VPCMPEQB Y0, Y3, Y3
	VMOVDQU -1(SI)(DI*1), Y4   // and the byte below: opc 01
	VPAND Y1, Y4, Y4
	VPCMPEQB Y2, Y4, Y4
	VPAND Y4, Y3, Y3
	VMOVDQU -4(SI)(DI*1), Y4   // the word before: ADRP, or ADD
	VPAND Y6, Y4, Y5
	VPCMPEQB Y7, Y5, Y5
	VPCMPEQB Y8, Y4, Y4
	VMOVDQU -8(SI)(DI*1), Y9   // and then ADRP before the ADD
	VPAND Y6, Y9, Y9
	VPCMPEQB Y7, Y9, Y9
	VPAND Y9, Y4, Y4
	VPOR Y5, Y4, Y4
	VPAND Y4, Y3, Y3
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
