#include "textflag.h"

// func indexLoadAVX2(b []byte) int
//
// The first i in 8 <= i <= len(b)-32 with b[i] == 0x39, b[i-1]&0xC0 == 0x40, and
// b[i-4]&0x9F == 0x90 or b[i-4] == 0x91 and b[i-8]&0x9F == 0x90, 32 positions at a
// time with AVX2; else -1-n, where n is the first position it did not look at.
// The bytes it compares with, each broadcast to a whole register.
DATA  loadBytes<>+0(SB)/1, $0x39 // an LDRB's top byte
DATA  loadBytes<>+1(SB)/1, $0xC0 // the mask of its opc
DATA  loadBytes<>+2(SB)/1, $0x40 // opc 01
DATA  loadBytes<>+3(SB)/1, $0x9F // the mask of an ADRP's top byte
DATA  loadBytes<>+4(SB)/1, $0x90 // ADRP
DATA  loadBytes<>+5(SB)/1, $0x91 // ADD (immediate, 64-bit)
GLOBL loadBytes<>(SB), RODATA|NOPTR, $6

TEXT ·indexLoadAVX2(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), BX
	VPBROADCASTB loadBytes<>+0(SB), Y0
	VPBROADCASTB loadBytes<>+1(SB), Y1
	VPBROADCASTB loadBytes<>+2(SB), Y2
	VPBROADCASTB loadBytes<>+3(SB), Y6
	VPBROADCASTB loadBytes<>+4(SB), Y7
	VPBROADCASTB loadBytes<>+5(SB), Y8
	LEAQ 8(SI), DI          // p, the first of the 32 positions looked at
	LEAQ -32(SI)(BX*1), BX  // the last p with 32 bytes from it
next:
	CMPQ DI, BX
	JHI  tail
	VMOVDQU (DI), Y3        // LDRB's top byte
	VPCMPEQB Y0, Y3, Y3
	VMOVDQU -1(DI), Y4      // and the byte below: opc 01
	VPAND Y1, Y4, Y4
	VPCMPEQB Y2, Y4, Y4
	VPAND Y4, Y3, Y3
	VMOVDQU -4(DI), Y4      // the word before: ADRP, or ADD
	VPAND Y6, Y4, Y5
	VPCMPEQB Y7, Y5, Y5
	VPCMPEQB Y8, Y4, Y4
	VMOVDQU -8(DI), Y9      // and then ADRP before the ADD
	VPAND Y6, Y9, Y9
	VPCMPEQB Y7, Y9, Y9
	VPAND Y9, Y4, Y4
	VPOR Y5, Y4, Y4
	VPAND Y4, Y3, Y3
	VPMOVMSKB Y3, DX
	ADDQ $32, DI
	TESTL DX, DX
	JZ   next
	VZEROUPPER              // a hit: at p-32 plus its bit
	BSFL DX, DX
	LEAQ -32(DI)(DX*1), AX
	SUBQ SI, AX
	MOVQ AX, ret+24(FP)
	RET
tail:
	VZEROUPPER              // -1 minus the first position not looked at
	SUBQ SI, DI
	NOTQ DI
	MOVQ DI, ret+24(FP)
	RET
