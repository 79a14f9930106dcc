//go:build mips64 || mips64le

#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-48
	MOVV $runtime·text(SB), R1
	MOVV R1, text+0(FP)
	MOVV $runtime·etext(SB), R1
	MOVV R1, etext+8(FP)
	MOVV $runtime·data(SB), R1
	MOVV R1, data+16(FP)
	MOVV $runtime·edata(SB), R1
	MOVV R1, edata+24(FP)
	MOVV $runtime·bss(SB), R1
	MOVV R1, bss+32(FP)
	MOVV $runtime·ebss(SB), R1
	MOVV R1, ebss+40(FP)
	RET
