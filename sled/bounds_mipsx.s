//go:build mips || mipsle

#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-24
	MOVW $runtime·text(SB), R1
	MOVW R1, text+0(FP)
	MOVW $runtime·etext(SB), R1
	MOVW R1, etext+4(FP)
	MOVW $runtime·data(SB), R1
	MOVW R1, data+8(FP)
	MOVW $runtime·edata(SB), R1
	MOVW R1, edata+12(FP)
	MOVW $runtime·bss(SB), R1
	MOVW R1, bss+16(FP)
	MOVW $runtime·ebss(SB), R1
	MOVW R1, ebss+20(FP)
	RET
