#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-48
	MOVV $runtime·text(SB), R4
	MOVV R4, text+0(FP)
	MOVV $runtime·etext(SB), R4
	MOVV R4, etext+8(FP)
	MOVV $runtime·data(SB), R4
	MOVV R4, data+16(FP)
	MOVV $runtime·edata(SB), R4
	MOVV R4, edata+24(FP)
	MOVV $runtime·bss(SB), R4
	MOVV R4, bss+32(FP)
	MOVV $runtime·ebss(SB), R4
	MOVV R4, ebss+40(FP)
	RET
