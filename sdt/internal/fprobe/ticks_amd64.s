#include "textflag.h"

// func ticks() uint64
//
// The CPU's counter, read as package control stamps events (RDTSC without a fence):
// a return event's time is on the trace's own clock.
TEXT ·ticks(SB), NOSPLIT, $0-8
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func publish(p *uint64, v uint64)
//
// A store with release semantics and nothing more: on amd64 every store is one (TSO),
// where sync/atomic's Store is an XCHG, a full barrier. Only a word's one writer uses it.
TEXT ·publish(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
