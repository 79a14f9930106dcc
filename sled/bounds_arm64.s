#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-48
	MOVD $runtime·text(SB), R0
	MOVD R0, text+0(FP)
	MOVD $runtime·etext(SB), R0
	MOVD R0, etext+8(FP)
	MOVD $runtime·data(SB), R0
	MOVD R0, data+16(FP)
	MOVD $runtime·edata(SB), R0
	MOVD R0, edata+24(FP)
	MOVD $runtime·bss(SB), R0
	MOVD R0, bss+32(FP)
	MOVD $runtime·ebss(SB), R0
	MOVD R0, ebss+40(FP)
	RET
