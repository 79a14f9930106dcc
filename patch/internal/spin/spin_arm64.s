#include "textflag.h"

// func WhileLess(addr *uint32, v uint32, iters uint64) uint32
TEXT ·WhileLess(SB), NOSPLIT|NOFRAME, $0-28
	MOVD	addr+0(FP), R0
	MOVWU	v+8(FP), R1
	MOVD	iters+16(FP), R2
loop:
	LDARW	(R0), R3
	CMPW	R1, R3
	BHS	done
	CBZ	R2, done
	YIELD
	SUB	$1, R2
	B	loop
done:
	MOVW	R3, ret+24(FP)
	RET
