#include "textflag.h"

// func stamp() (ticks uint64, gp uintptr)
//
// RDTSC without a fence: an event's time need not wait for the instructions before
// it (the runtime's cputicks uses RDTSCP, which does, at three times the cost here).
TEXT ·stamp(SB),NOSPLIT,$0-16
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ticks+0(FP)
	MOVQ	TLS, AX
	MOVQ	0(AX)(TLS*1), AX
	MOVQ	AX, gp+8(FP)
	RET

// func publish(p *uint64, v uint64)
//
// A plain store: on amd64 every store is a release (TSO), and sync/atomic's Store is
// an XCHG, a full barrier that costs as much as the rest of a record's write.
TEXT ·publish(SB),NOSPLIT,$0-16
	MOVQ	p+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, (AX)
	RET
