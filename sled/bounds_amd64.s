#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-48
	MOVQ $runtime·text(SB), AX
	MOVQ AX, text+0(FP)
	MOVQ $runtime·etext(SB), AX
	MOVQ AX, etext+8(FP)
	MOVQ $runtime·data(SB), AX
	MOVQ AX, data+16(FP)
	MOVQ $runtime·edata(SB), AX
	MOVQ AX, edata+24(FP)
	MOVQ $runtime·bss(SB), AX
	MOVQ AX, bss+32(FP)
	MOVQ $runtime·ebss(SB), AX
	MOVQ AX, ebss+40(FP)
	RET
