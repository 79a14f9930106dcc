#include "textflag.h"

// func ticks() uint64
//
// The virtual counter (CNTVCT_EL0), read as package control stamps events.
TEXT ·ticks(SB), NOSPLIT, $0-8
	MRS  CNTVCT_EL0, R0
	MOVD R0, ret+0(FP)
	RET

// func publish(p *uint64, v uint64)
//
// A store-release (STLR): what was written before it is visible before it is.
TEXT ·publish(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	MOVD v+8(FP), R1
	STLR R1, (R0)
	RET
