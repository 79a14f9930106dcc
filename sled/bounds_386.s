#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-24
	MOVL $runtime·text(SB), AX
	MOVL AX, text+0(FP)
	MOVL $runtime·etext(SB), AX
	MOVL AX, etext+4(FP)
	MOVL $runtime·data(SB), AX
	MOVL AX, data+8(FP)
	MOVL $runtime·edata(SB), AX
	MOVL AX, edata+12(FP)
	MOVL $runtime·bss(SB), AX
	MOVL AX, bss+16(FP)
	MOVL $runtime·ebss(SB), AX
	MOVL AX, ebss+20(FP)
	RET
