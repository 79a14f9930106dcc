#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-48
	MOVD $runtime·text(SB), R1
	MOVD R1, text+0(FP)
	MOVD $runtime·etext(SB), R1
	MOVD R1, etext+8(FP)
	MOVD $runtime·data(SB), R1
	MOVD R1, data+16(FP)
	MOVD $runtime·edata(SB), R1
	MOVD R1, edata+24(FP)
	MOVD $runtime·bss(SB), R1
	MOVD R1, bss+32(FP)
	MOVD $runtime·ebss(SB), R1
	MOVD R1, ebss+40(FP)
	RET
