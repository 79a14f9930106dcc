#include "textflag.h"

// func evict(p unsafe.Pointer)
TEXT ·evict(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	CLFLUSH (AX)
	MFENCE
	RET
