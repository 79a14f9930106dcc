#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-24
	MOVW $runtime·text(SB), R0
	MOVW R0, text+0(FP)
	MOVW $runtime·etext(SB), R0
	MOVW R0, etext+4(FP)
	MOVW $runtime·data(SB), R0
	MOVW R0, data+8(FP)
	MOVW $runtime·edata(SB), R0
	MOVW R0, edata+12(FP)
	MOVW $runtime·bss(SB), R0
	MOVW R0, bss+16(FP)
	MOVW $runtime·ebss(SB), R0
	MOVW R0, ebss+20(FP)
	RET
