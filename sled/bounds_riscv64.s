#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-48
	MOV $runtime·text(SB), X5
	MOV X5, text+0(FP)
	MOV $runtime·etext(SB), X5
	MOV X5, etext+8(FP)
	MOV $runtime·data(SB), X5
	MOV X5, data+16(FP)
	MOV $runtime·edata(SB), X5
	MOV X5, edata+24(FP)
	MOV $runtime·bss(SB), X5
	MOV X5, bss+32(FP)
	MOV $runtime·ebss(SB), X5
	MOV X5, ebss+40(FP)
	RET
