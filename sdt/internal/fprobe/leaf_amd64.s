#include "textflag.h"
#include "funcdata.h"
#include "regs_amd64.h"

// Entry probes of leaves (leaf.go; DESIGN.md, "Leaves", the safety argument).

#define B8 BYTE $0xCC; BYTE $0xCC; BYTE $0xCC; BYTE $0xCC; BYTE $0xCC; BYTE $0xCC; BYTE $0xCC; BYTE $0xCC
#define B64 B8; B8; B8; B8; B8; B8; B8; B8
#define B512 B64; B64; B64; B64; B64; B64; B64; B64
#define B4K B512; B512; B512; B512; B512; B512; B512; B512

// leafSlots is leafSlotCount slots of leafSlotLen bytes, INT3 until Set writes one
// (leafSlotCode): assembly, so never preempted, and at SP delta 0, so a profiling
// signal's traceback finds the leaf's caller at 0(SP).
TEXT ·leafSlots(SB), NOSPLIT|NOFRAME, $0-0
	B4K

// The room the stub needs below the leaf's SP, above g.stack.lo: its frames and the
// nosplit chain below them (leafHandler's; a few hundred bytes, which the linker
// proves fit in StackLimit), with a margin. Past that, leafSlow is ordinary Go whose
// own check grows the stack. Not stackguard0: a preemption request poisons it, and
// the guard above stack.lo is there for nosplit code such as this.
#define LEAF_NEED 1024

// leafStub is jumped to by slot R12 with the leaf's SP: 0(SP) is the leaf's return
// address. R12 and R13 are dead at a function's entry (scratch in ABIInternal),
// R14 is g. Without the room the entry is counted in leafSkipped and not delivered.
// Then back to the slot, which runs the displaced instruction with every register as
// the leaf received it.
TEXT ·leafStub(SB), NOSPLIT|NOFRAME, $0-0
	LEAQ -LEAF_NEED(SP), R13
	CMPQ R13, 0(R14)          // g.stack.lo
	JLS  short
	LEAQ 8(SP), R13           // the leaf's argument area, above its return address
	CALL ·leafBody(SB)
	JMP  back
short:
	LEAQ ·leafSkipped(SB), R13
	LOCK
	INCQ (R13)(R12*8)
back:
	SHLQ $5, R12              // leafSlotLen
	LEAQ ·leafSlots(SB), R13
	LEAQ 11(R13)(R12*1), R13  // leafSlotRun
	JMP  R13

// leafBody (R12 the slot, R13 the leaf's argument area) saves the argument registers, calls leafHandler(i, argp, g, args) and restores
// them, and R12. Frame: 0..31 the handler's arguments | 32..103 AX BX CX DI SI R8 R9
// R10 R11 | 104..223 X0..X14 | 224 DX | 232 the argument area | 240 R14 (g) | 248 R12. Its caller is leafStub at SP delta
// 0, whose return address is the leaf's: the traceback goes to the leaf's caller.
TEXT ·leafBody(SB), NOSPLIT, $256-0
	NO_LOCAL_POINTERS
	SAVE_ARG_REGS
	MOVQ DX, 224(SP)
	MOVQ R13, 232(SP)
	MOVQ R14, 240(SP)
	MOVQ R12, 248(SP)
	MOVQ R12, 0(SP)
	LEAQ 32(SP), R13
	MOVQ R13, 8(SP)
	MOVQ R14, 16(SP)
	MOVQ 232(SP), R13         // the leaf's argument area
	MOVQ R13, 24(SP)
	CALL ·leafHandler(SB)
	RESTORE_ARG_REGS
	MOVQ 224(SP), DX
	MOVQ 248(SP), R12
	MOVQ 240(SP), R14
	RET

// func leafAddrs() (slots, stub uintptr)
TEXT ·leafAddrs(SB), NOSPLIT, $0-16
	LEAQ ·leafSlots(SB), AX
	MOVQ AX, slots+0(FP)
	LEAQ ·leafStub(SB), AX
	MOVQ AX, stub+8(FP)
	RET

// Returns by a jump (jret.go; DESIGN.md, "Returns by a jump").

#define B2K B512; B512; B512; B512

// jretSlots is jretSlotCount slots of jretSlotLen bytes, INT3 until Set writes one
// (jretSlotCode: MOVL $i, R12; JMP jretStub): NOSPLIT|NOFRAME at SP delta 0, as
// leafSlots, so a profiling signal's traceback finds the returning function's caller
// at 0(SP).
TEXT ·jretSlots(SB), NOSPLIT|NOFRAME, $0-0
	B2K

// jretStub is jumped to by return slot R12 from a function's RET: its frame is gone,
// 0(SP) is its caller's return address and the result registers are live; R12 and R13
// are scratch after a return (not results in ABIInternal), R14 is g. Without the room
// for jretBody and the handler's nosplit chain, the return is counted in jretSkipped and
// not delivered; never morestack. The unwinder sees the function returned: this
// frame's return address is its caller's.
TEXT ·jretStub(SB), NOSPLIT|NOFRAME, $0-0
	LEAQ -LEAF_NEED(SP), R13
	CMPQ R13, 0(R14)          // g.stack.lo
	JLS  rshort
	CALL ·jretBody(SB)
	RET
rshort:
	LEAQ ·jretSkipped(SB), R13
	LOCK
	INCQ (R13)(R12*8)
	RET

// jretBody (R12 the slot) saves the result registers, calls retHandler(cfg, argp,
// g, regs) with slot R12's config (then retDirect, as retBody) and argp the returning function's SP+8 (its entry's
// too: the key of its entry time), restores them and returns to jretStub. Frame: 0 cfg
// | 8 argp | 16 g | 24 regs | 32..96 AX..R11 | 104..216 X0..X14 | 224 g, as retBody's.
// No safe point between the RET and the caller: results that hold pointers need no
// stack map (retHandler is nosplit and calls only nosplit code).
TEXT ·jretBody(SB), NOSPLIT, $232-0
	NO_LOCAL_POINTERS
	LEAQ ·jretCfgs(SB), R13
	MOVQ (R13)(R12*8), R13
	TESTQ R13, R13
	JEQ  rnone                // not reached: the jump is gone before the config
	SAVE_ARG_REGS
	RETURN_PROBE(R13)
rnone:
	RET

// func jretAddrs() (slots, stub uintptr)
TEXT ·jretAddrs(SB), NOSPLIT, $0-16
	LEAQ ·jretSlots(SB), AX
	MOVQ AX, slots+0(FP)
	LEAQ ·jretStub(SB), AX
	MOVQ AX, stub+8(FP)
	RET
