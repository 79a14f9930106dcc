#include "textflag.h"

// func stamp() (ticks uint64, gp uintptr)
//
// The virtual counter (CNTVCT_EL0), which Linux lets user space read.
TEXT ·stamp(SB),NOSPLIT,$0-16
	MRS	CNTVCT_EL0, R0
	MOVD	R0, ticks+0(FP)
	MOVD	g, R1
	MOVD	R1, gp+8(FP)
	RET

// func publish(p *uint64, v uint64)
//
// A store-release (STLR): the record's bytes are visible before its end is.
TEXT ·publish(SB),NOSPLIT,$0-16
	MOVD	p+0(FP), R0
	MOVD	v+8(FP), R1
	STLR	R1, (R0)
	RET
