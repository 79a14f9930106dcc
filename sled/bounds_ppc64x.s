//go:build ppc64 || ppc64le

#include "textflag.h"

// func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
TEXT ·moduleBounds(SB), NOSPLIT, $0-48
	MOVD $runtime·text(SB), R3
	MOVD R3, text+0(FP)
	MOVD $runtime·etext(SB), R3
	MOVD R3, etext+8(FP)
	MOVD $runtime·data(SB), R3
	MOVD R3, data+16(FP)
	MOVD $runtime·edata(SB), R3
	MOVD R3, edata+24(FP)
	MOVD $runtime·bss(SB), R3
	MOVD R3, bss+32(FP)
	MOVD $runtime·ebss(SB), R3
	MOVD R3, ebss+40(FP)
	RET
