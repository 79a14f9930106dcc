#include "textflag.h"
#include "funcdata.h"
#include "regs_arm64.h"

// Entry probes of leaves on arm64 (leaf.go; DESIGN.md, "Leaves", the safety argument).
#define W8 WORD $0; WORD $0; WORD $0; WORD $0; WORD $0; WORD $0; WORD $0; WORD $0
#define W64 W8; W8; W8; W8; W8; W8; W8; W8
#define W512 W64; W64; W64; W64; W64; W64; W64; W64

// leafSlots is leafSlotCount slots of leafSlotLen bytes, UDF until Set writes one
// (leafSlotCode): assembly, so never preempted, and at SP delta 0, so a profiling
// signal's traceback takes the leaf's caller from R30.
TEXT ·leafSlots(SB), NOSPLIT|NOFRAME, $0-0
	W512

// The room the stub needs below the leaf's RSP, above g.stack.lo: its frames and the
// nosplit chain below them (leafHandler's; a few hundred bytes, which the linker
// proves fit in StackLimit), with a margin. Past that, leafSlow is ordinary Go whose
// own check grows the stack. Not stackguard0: a preemption request poisons it.
#define LEAF_NEED 1024

// leafStub is branched to by slot R16 with the leaf's RSP and R30 (its return
// address). R16, R17, R19 and R20 are dead at a function's entry (abi-internal.md:
// scratch, or no argument), R28 is g. Without the room the entry is counted in
// leafSkipped and not delivered. Else leafBody, by B: its prologue saves R30, so the
// unwinder sees the leaf's caller call it.
TEXT ·leafStub(SB), NOSPLIT|NOFRAME, $0-0
	MOVD RSP, R17
	SUB  $LEAF_NEED, R17, R17
	MOVD 0(g), R19            // g.stack.lo
	CMP  R19, R17
	BLS  short
	MOVD RSP, R17
	ADD  $8, R17, R17         // the leaf's argument area
	JMP  ·leafBody(SB)
short:
	MOVD $·leafSkipped(SB), R17
	ADD  R16<<3, R17, R17
again:
	LDAXR (R17), R19
	ADD  $1, R19, R19
	STLXR R19, (R17), R20
	CBNZ R20, again
	JMP  ·leafBack(SB)

// leafBody (R16 the slot, R17 the leaf's argument area) saves the argument
// registers, calls leafHandler(i, argp, g, args), restores them and R16, and leaves
// through its epilogue (which restores R30, the leaf's return address) to leafBack.
// Frame: 8..39 the handler's arguments | 40..167 R0..R15 | 168..295 F0..F15 | 296 R26
// | 304 R16 | 312 the argument area (no gap: with -N -l the nosplit chain below has no
// byte to spare).
TEXT ·leafBody(SB), NOSPLIT, $320-0
	NO_LOCAL_POINTERS
	SAVE_ARG_REGS
	MOVD R26, 296(RSP)
	MOVD R16, 304(RSP)
	MOVD R17, 312(RSP)
	MOVD R16, 8(RSP)
	ADD  $40, RSP, R19
	MOVD R19, 16(RSP)
	MOVD g, 24(RSP)
	MOVD R17, 32(RSP)
	CALL ·leafHandler(SB)
	RESTORE_ARG_REGS
	MOVD 296(RSP), R26
	MOVD 304(RSP), R16
	RET  ·leafBack(SB)        // the epilogue, then a jump

// leafBack branches to slot R16's displaced instruction, with RSP and R30 the leaf's.
TEXT ·leafBack(SB), NOSPLIT|NOFRAME, $0-0
	MOVD $·leafSlots(SB), R17
	ADD  R16<<4, R17, R17     // leafSlotLen
	ADD  $8, R17, R17
	JMP  (R17)

// func leafAddrs() (slots, stub uintptr)
TEXT ·leafAddrs(SB), NOSPLIT, $0-16
	MOVD $·leafSlots(SB), R0
	MOVD R0, slots+0(FP)
	MOVD $·leafStub(SB), R0
	MOVD R0, stub+8(FP)
	RET

// Returns by a jump (jret.go; DESIGN.md, "Returns by a jump").

#define W256 W64; W64; W64; W64

// jretSlots is jretSlotCount slots of jretSlotLen bytes, UDF until Set writes one
// (jretSlotCode: MOVZ $i, R16; B jretStub): NOSPLIT|NOFRAME at SP delta 0, as
// leafSlots, so a profiling signal's traceback takes the function's caller from R30.
TEXT ·jretSlots(SB), NOSPLIT|NOFRAME, $0-0
	W256

// jretStub is branched to by return slot R16 from a function's RET: its frame is
// gone, RSP and R30 (its caller's return address) as at its entry, the result
// registers live; R16, R17, R19 and R20 are scratch after a return (not results in
// ABIInternal), R28 is g. Without the room for jretBody and the handler's nosplit
// chain, the return is counted in jretSkipped and not delivered: RET to the caller,
// never morestack. Else jretBody, by B: its prologue saves R30, so the unwinder sees
// the function's caller call it, the function gone.
TEXT ·jretStub(SB), NOSPLIT|NOFRAME, $0-0
	MOVD RSP, R17
	SUB  $LEAF_NEED, R17, R17
	MOVD 0(g), R19            // g.stack.lo
	CMP  R19, R17
	BLS  rshort
	MOVD RSP, R17
	ADD  $8, R17, R17         // argp: the entry SP plus a word, the entry's key
	JMP  ·jretBody(SB)
rshort:
	MOVD $·jretSkipped(SB), R17
	ADD  R16<<3, R17, R17
ragain:
	LDAXR (R17), R19
	ADD  $1, R19, R19
	STLXR R19, (R17), R20
	CBNZ R20, ragain
	RET

// jretBody (R16 the slot, R17 argp) saves the result registers, calls
// retHandler(cfg, argp, g, regs) with slot R16's config (then retDirect, as
// retBody), restores them and returns through its epilogue (R30 as the function
// received it) to the function's caller. Frame: 8..39 the handler's arguments |
// 40..167 R0..R15 | 168..295 F0..F15 (no gap: with -N -l the nosplit chain below has
// no byte to spare). No safe point between the RET and the caller: results that hold
// pointers need no stack map.
TEXT ·jretBody(SB), NOSPLIT, $296-0
	NO_LOCAL_POINTERS
	MOVD $·jretCfgs(SB), R19
	ADD  R16<<3, R19, R19
	MOVD (R19), R19
	CBZ  R19, rnone           // not reached: the jump is gone before the config
	SAVE_ARG_REGS
	RETURN_PROBE(R19)
rnone:
	RET

// func jretAddrs() (slots, stub uintptr)
TEXT ·jretAddrs(SB), NOSPLIT, $0-16
	MOVD $·jretSlots(SB), R0
	MOVD R0, slots+0(FP)
	MOVD $·jretStub(SB), R0
	MOVD R0, stub+8(FP)
	RET
