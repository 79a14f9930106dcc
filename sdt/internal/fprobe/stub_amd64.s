#include "textflag.h"
#include "funcdata.h"
#include "regs_amd64.h"

// The entry and return stubs of function probes (stub_amd64.go has the layout of a
// config and the argument for each step; DESIGN.md the whole safety argument).

#define CFG_MORESTACK 0
#define CFG_CHECK     8
#define CFG_RESUME    16
#define CFG_CTXT      24
#define CFG_FRAME     32
#define CFG_RET       40
#define CFG_NSPILL    48
#define CFG_SPILLS    56
#define CFG_NINT      256
#define CFG_NFLT      264
#define CFG_LIVE      272

// LOOKUP sets R12 to the config of the site whose call's return address is in R13,
// from the open-addressing table keys/cfgs, using only R12, R13 and R15: at a
// function's entry every other register may be an argument. A site is in the table
// from before its call is written until after it is gone, so the search ends at it.
#define LOOKUP(label, found, missing) \
	MOVQ $0x9E3779B97F4A7C15, R12 \
	IMULQ R13, R12 \
	SHRQ $(64-TABBITS), R12 \
	LEAQ ·keys(SB), R15 \
label: \
	CMPQ R13, (R15)(R12*8) \
	JEQ  found \
	CMPQ (R15)(R12*8), $0 \
	JEQ  missing \
	INCQ R12 \
	ANDQ $(TABSIZE-1), R12 \
	JMP  label \
missing: \
	BYTE $0x0F; BYTE $0x0B \
found: \
	LEAQ ·cfgs(SB), R15 \
	MOVQ (R15)(R12*8), R12

#define TABBITS 12
#define TABSIZE 4096

// entryStub is called by the CALL written over a function's stack check: 0(SP) is
// the call's return address, 8(SP) the function's own. It performs the check the call
// replaced (the address compared is the entry SP plus the config's check displacement)
// and, when it fails, leaves as the function's JLS would have: to the function's own
// morestack block with the entry SP, which comes back to the entry and so here again.
TEXT ·entryStub(SB), NOSPLIT|NOFRAME, $0-0
	MOVQ 0(SP), R13
	LOOKUP(elook, efound, emissing)
	MOVQ CFG_CHECK(R12), R15
	LEAQ 8(SP)(R15*1), R13
	CMPQ R13, 16(R14)         // g.stackguard0
	JLS  egrow
	JMP  ·entryBody(SB)
egrow:
	POPQ R13
	MOVQ CFG_MORESTACK(R12), R13
	JMP  R13

// SAVE and RESTORE keep the argument registers the function's layout uses (CFG_NINT
// integer, CFG_NFLT floating-point ones, counted from the first of the ABI's order)
// in the frame, in steps: at a function's entry the others hold nothing live.
#define SAVE \
	MOVQ CFG_NINT(R12), R15 \
	TESTQ R15, R15 \
	JEQ  sflt \
	MOVQ AX, 48(SP) \
	MOVQ BX, 56(SP) \
	MOVQ CX, 64(SP) \
	CMPQ R15, $3 \
	JLE  sflt \
	MOVQ DI, 72(SP) \
	MOVQ SI, 80(SP) \
	CMPQ R15, $5 \
	JLE  sflt \
	MOVQ R8, 88(SP) \
	MOVQ R9, 96(SP) \
	MOVQ R10, 104(SP) \
	MOVQ R11, 112(SP) \
sflt: \
	MOVQ CFG_NFLT(R12), R15 \
	TESTQ R15, R15 \
	JEQ  ssaved \
	MOVSD X0, 120(SP) \
	MOVSD X1, 128(SP) \
	MOVSD X2, 136(SP) \
	MOVSD X3, 144(SP) \
	CMPQ R15, $4 \
	JLE  ssaved \
	MOVSD X4, 152(SP) \
	MOVSD X5, 160(SP) \
	MOVSD X6, 168(SP) \
	MOVSD X7, 176(SP) \
	MOVSD X8, 184(SP) \
	MOVSD X9, 192(SP) \
	MOVSD X10, 200(SP) \
	MOVSD X11, 208(SP) \
	MOVSD X12, 216(SP) \
	MOVSD X13, 224(SP) \
	MOVSD X14, 232(SP) \
ssaved:

#define RESTORE \
	MOVQ CFG_NINT(R12), R15 \
	TESTQ R15, R15 \
	JEQ  rflt \
	MOVQ 48(SP), AX \
	MOVQ 56(SP), BX \
	MOVQ 64(SP), CX \
	CMPQ R15, $3 \
	JLE  rflt \
	MOVQ 72(SP), DI \
	MOVQ 80(SP), SI \
	CMPQ R15, $5 \
	JLE  rflt \
	MOVQ 88(SP), R8 \
	MOVQ 96(SP), R9 \
	MOVQ 104(SP), R10 \
	MOVQ 112(SP), R11 \
rflt: \
	MOVQ CFG_NFLT(R12), R15 \
	TESTQ R15, R15 \
	JEQ  rrestored \
	MOVSD 120(SP), X0 \
	MOVSD 128(SP), X1 \
	MOVSD 136(SP), X2 \
	MOVSD 144(SP), X3 \
	CMPQ R15, $4 \
	JLE  rrestored \
	MOVSD 152(SP), X4 \
	MOVSD 160(SP), X5 \
	MOVSD 168(SP), X6 \
	MOVSD 176(SP), X7 \
	MOVSD 184(SP), X8 \
	MOVSD 192(SP), X9 \
	MOVSD 200(SP), X10 \
	MOVSD 208(SP), X11 \
	MOVSD 216(SP), X12 \
	MOVSD 224(SP), X13 \
	MOVSD 232(SP), X14 \
rrestored:

// entryBody: 0(SP) is still the call's return address, BP+24 the function's first
// argument slot. Frame: 0..47 the handlers' arguments and results (entryFast: cfg,
// argp, g, slow; entrySlow: cfg, argp, ctxt, g, slow, ctxt) | 48..112 AX BX CX DI SI
// R8 R9 R10 R11 | 120..232 X0..X14 | 240 cfg | 248 g | 256 DX (the handlers own their
// argument slots: what the stub needs back is kept apart).
//
// entryFast, nosplit Go with no safe point, counts the event and takes the entry
// time with the arguments only in this frame; the spill into the function's slots and
// a handler that may reach a safe point (entrySlow) only when it says so: when
// somebody consumes the event, or the return ring needs Go code first.
TEXT ·entryBody(SB), NOSPLIT, $264-0
	NO_LOCAL_POINTERS
	MOVQ R12, 240(SP)
	MOVQ R14, 248(SP)
	MOVQ DX, 256(SP)
	SAVE
	MOVQ R12, 0(SP)
	LEAQ 24(BP), R13
	MOVQ R13, 8(SP)
	MOVQ R14, 16(SP)
	CALL ·entryFast(SB)
	MOVQ 240(SP), R12
	MOVQ 24(SP), R13
	TESTQ R13, R13
	JEQ  ereloaded
	MOVQ R13, 32(SP)          // slow
	MOVQ 248(SP), R14
	MOVQ R14, 24(SP)
	MOVQ R12, 0(SP)
	MOVQ $0, 16(SP)
	CMPQ CFG_CTXT(R12), $0
	JEQ  3(PC)
	MOVQ 256(SP), R13
	MOVQ R13, 16(SP)          // the closure context goes through the handler typed
	LEAQ 24(BP), R13
	MOVQ R13, 8(SP)
	// Spill the register arguments into the function's own spill slots, with the
	// widths its morestack block uses: its stack map 0 covers them.
	MOVQ CFG_NSPILL(R12), CX
	LEAQ CFG_SPILLS(R12), SI
espill:
	TESTQ CX, CX
	JEQ  espilled
	MOVQ (SI), DX
	MOVLQSX DX, DI            // offset from argp
	MOVQ DX, R8
	SHRQ $40, R8              // save slot
	MOVQ 48(SP)(R8*8), R9
	SHRQ $32, DX
	ANDQ $0xFF, DX            // size
	CMPQ DX, $8
	JNE  es4
	MOVQ R9, (R13)(DI*1)
	JMP  enext
es4:
	CMPQ DX, $4
	JNE  es2
	MOVL R9, (R13)(DI*1)
	JMP  enext
es2:
	CMPQ DX, $2
	JNE  es1
	MOVW R9, (R13)(DI*1)
	JMP  enext
es1:
	MOVB R9, (R13)(DI*1)
enext:
	ADDQ $8, SI
	DECQ CX
	JMP  espill
espilled:
	CALL ·entrySlow(SB)
	MOVQ 240(SP), R12
	CMPQ CFG_CTXT(R12), $0
	JEQ  3(PC)
	MOVQ 40(SP), R13          // the context as the handler returned it: adjusted
	MOVQ R13, 256(SP)
	LEAQ 24(BP), R13          // again: the stack may have moved
	// Reload what the slots hold now (a pointer into the stack was adjusted if the
	// stack moved), into the low bytes of each saved register.
	MOVQ CFG_NSPILL(R12), CX
	LEAQ CFG_SPILLS(R12), SI
ereload:
	TESTQ CX, CX
	JEQ  ereloaded
	MOVQ (SI), DX
	MOVLQSX DX, DI
	MOVQ DX, R8
	SHRQ $40, R8
	SHRQ $32, DX
	ANDQ $0xFF, DX
	CMPQ DX, $8
	JNE  er4
	MOVQ (R13)(DI*1), R9
	MOVQ R9, 48(SP)(R8*8)
	JMP  rnext
er4:
	CMPQ DX, $4
	JNE  er2
	MOVL (R13)(DI*1), R9
	MOVL R9, 48(SP)(R8*8)
	JMP  rnext
er2:
	CMPQ DX, $2
	JNE  er1
	MOVW (R13)(DI*1), R9
	MOVW R9, 48(SP)(R8*8)
	JMP  rnext
er1:
	MOVB (R13)(DI*1), R9
	MOVB R9, 48(SP)(R8*8)
rnext:
	ADDQ $8, SI
	DECQ CX
	JMP  ereload
ereloaded:
	RESTORE
	MOVQ 256(SP), DX
	MOVQ 248(SP), R14
	XORPS X15, X15
	// Return past the replaced code, to an address that is an instruction of the
	// function whether or not the probe is still there; or, while the call is
	// surely written (config.live), to its own return address.
	CMPQ CFG_LIVE(R12), $0
	JNE  3(PC)
	MOVQ CFG_RESUME(R12), R15
	MOVQ R15, 8(BP)
	// A large frame returns to its own CMPQ R12, 16(R14); JLS. The stub checked before
	// the handler; a preemption request since would fail that check and bring the
	// function back to its entry through morestack, a second entry event. So R12 gets
	// all ones (the check passes) when the frame fits above the stack's real guard,
	// g.stack.lo + guardMargin (once the handler has seen the margin); else the
	// function's own value, and its check grows the stack.
	MOVQ CFG_CHECK(R12), R15
	TESTQ R15, R15
	JEQ  edone
	LEAQ 16(BP)(R15*1), R12   // the entry SP plus the check's displacement
	MOVQ ·guardMargin(SB), R15
	TESTQ R15, R15
	JEQ  edone
	ADDQ 0(R14), R15          // g.stack.lo
	CMPQ R12, R15
	JLS  edone
	MOVQ $-1, R12
edone:
	RET

// retStub is called by the CALL written over an epilogue's ADDQ $N, SP (with the POPQ
// BP after it, where the call covers it). It performs them, then enters retBody as if
// the function had called it from its RET: there the function's SP delta is 0 and its
// frame gone, so the unwinder sees the function return to its caller. It writes SP
// other than by PUSH and POP but calls nothing, so it is only ever the innermost frame.
TEXT ·retStub(SB), NOSPLIT|NOFRAME, $0-0
	MOVQ 0(SP), R13
	LOOKUP(rlook, rfound, rmissing)
	POPQ R13
	MOVQ CFG_FRAME(R12), R15
	ADDQ R15, SP
	POPQ BP
	MOVQ CFG_RET(R12), R13
	PUSHQ R13
	JMP  ·retBody(SB)

// retBody: 0(SP) is the function's RET, BP+24 its first argument slot. Frame:
// 0 cfg | 8 argp | 16 g | 24 regs | 32..96 AX..R11 | 104..216 X0..X14 | 224 g.
// The handler is nosplit and calls nothing that is not: no safe point between here
// and the RET, so result registers that hold pointers need no stack map.
TEXT ·retBody(SB), NOSPLIT, $232-0
	NO_LOCAL_POINTERS
	SAVE_ARG_REGS
	RETURN_PROBE(R12)
	RET

TEXT ·stubAddrs(SB), NOSPLIT, $0-16
	LEAQ ·entryStub(SB), AX
	MOVQ AX, entry+0(FP)
	LEAQ ·retStub(SB), AX
	MOVQ AX, ret+8(FP)
	RET
