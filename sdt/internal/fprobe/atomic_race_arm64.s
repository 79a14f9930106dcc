//go:build race

#include "textflag.h"

// Atomics for the race detector's builds (atomic_race_arm64.go says why), sequentially
// consistent as sync/atomic's: acquire loads, release stores, exclusives with both.

TEXT ·load64(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	LDAR (R0), R1
	MOVD R1, ret+8(FP)
	RET

TEXT ·store64(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	MOVD v+8(FP), R1
	STLR R1, (R0)
	RET

TEXT ·add64(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	MOVD d+8(FP), R1
again:
	LDAXR (R0), R2
	ADD  R1, R2, R2
	STLXR R2, (R0), R3
	CBNZ R3, again
	RET

TEXT ·cas64(SB), NOSPLIT, $0-25
	MOVD p+0(FP), R0
	MOVD old+8(FP), R1
	MOVD new+16(FP), R2
again:
	LDAXR (R0), R3
	CMP  R1, R3
	BNE  fail
	STLXR R2, (R0), R4
	CBNZ R4, again
	MOVD $1, R5
	MOVB R5, ret+24(FP)
	RET
fail:
	CLREX
	MOVB ZR, ret+24(FP)
	RET

TEXT ·loadPtr(SB), NOSPLIT, $0-16
	MOVD p+0(FP), R0
	LDAR (R0), R1
	MOVD R1, ret+8(FP)
	RET
