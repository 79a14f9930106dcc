//go:build linux

#include "textflag.h"

// func serialize()
TEXT ·serialize(SB), NOSPLIT|NOFRAME, $0-0
	ISB	$15
	RET

// func syncICache(start, end uintptr)
TEXT ·syncICache(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	start+0(FP), R0
	MOVD	end+8(FP), R1
	MRS	CTR_EL0, R2
	UBFX	$16, R2, $4, R3		// DminLine: log2 of words per D-cache line
	MOVD	$4, R4
	LSL	R3, R4, R3		// D-cache line size in bytes
	AND	$15, R2, R5		// IminLine
	LSL	R5, R4, R5		// I-cache line size in bytes
	SUB	$1, R3, R6
	BIC	R6, R0, R7
dloop:
	DC	CVAU, R7
	ADD	R3, R7
	CMP	R1, R7
	BLO	dloop
	DSB	$11			// ISH
	SUB	$1, R5, R6
	BIC	R6, R0, R7
iloop:
	WORD	$0xd50b7527		// IC IVAU, R7 (no mnemonic in the Go assembler)
	ADD	R5, R7
	CMP	R1, R7
	BLO	iloop
	DSB	$11			// ISH
	ISB	$15
	RET
