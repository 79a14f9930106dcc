#include "textflag.h"
#include "funcdata.h"
#include "regs_arm64.h"

// The entry and return stubs of function probes on arm64 (DESIGN.md has the safety
// argument, stub_arm64.go the Go side). A probe is one BL written over one
// instruction: at the entry over the prologue's last, SUB $8, RSP, R29, once the
// function's own stack check has passed, its frame exists and its link register is
// saved; at a return over the epilogue's first, which reloads the frame pointer (and
// the link register) from the frame, still allocated.

#define CFG_CTXT      24
#define CFG_FRAME     32
#define CFG_NSPILL    48
#define CFG_SPILLS    56
#define CFG_NINT      320
#define CFG_NFLT      328

#define TABBITS 12
#define TABSIZE 4096

// LOOKUP sets R16 to the config of the site whose BL's return address is in R30, from
// the open-addressing table keys/cfgs (table.go), using only R16, R17 and R19, which
// carry no argument or result. The key is loaded with acquire (LDAR): insert writes
// the config before the key, and a plain load of cfgs after a plain load of keys is
// not ordered on arm64. A site is in the table from before its call is written until
// after it is gone, so the search ends at it.
#define LOOKUP(label, found, missing) \
	MOVD $0x9E3779B97F4A7C15, R16 \
	MUL  R30, R16, R16 \
	LSR  $(64-TABBITS), R16, R16 \
label: \
	MOVD $·keys(SB), R17 \
	ADD  R16<<3, R17, R17 \
	LDAR (R17), R19 \
	CMP  R30, R19 \
	BEQ  found \
	CBZ  R19, missing \
	ADD  $1, R16, R16 \
	AND  $(TABSIZE-1), R16, R16 \
	JMP  label \
missing: \
	UNDEF \
found: \
	MOVD $·cfgs(SB), R17 \
	MOVD (R17)(R16<<3), R16

// entryStub is called by the BL written over the prologue's SUB $8, RSP, R29: R30 is
// that BL's return address, the function's next instruction; RSP the function's own,
// its frame allocated, its caller's return address at 0(RSP) and the caller's frame
// pointer at -8(RSP). It finds the config, computes the address of the first argument
// slot (argp: the entry SP plus a word) into R17 and jumps to the framed body, whose
// saved link register is then the function's next instruction: the unwinder sees the
// function call the body from there, with its frame.
TEXT ·entryStub(SB), NOSPLIT|NOFRAME, $0-0
	LOOKUP(elook, efound, emissing)
	MOVD CFG_FRAME(R16), R17
	MOVD RSP, R19
	ADD  R19, R17, R17
	ADD  $8, R17, R17
	JMP  ·entryBody(SB)

// SAVE and RESTORE keep the argument registers the function's layout uses (CFG_NINT
// integer, CFG_NFLT floating-point ones, counted from R0 and F0) in the frame, in
// steps: at a function's entry the others hold nothing live (all are caller-saved in
// ABIInternal, and an argument the function never uses is never read). R16 the config.
#define SAVE \
	MOVD CFG_NINT(R16), R19 \
	CBZ  R19, sflt \
	STP  (R0, R1), 56(RSP) \
	STP  (R2, R3), 72(RSP) \
	CMP  $4, R19 \
	BLE  sflt \
	STP  (R4, R5), 88(RSP) \
	STP  (R6, R7), 104(RSP) \
	CMP  $8, R19 \
	BLE  sflt \
	STP  (R8, R9), 120(RSP) \
	STP  (R10, R11), 136(RSP) \
	STP  (R12, R13), 152(RSP) \
	STP  (R14, R15), 168(RSP) \
sflt: \
	MOVD CFG_NFLT(R16), R19 \
	CBZ  R19, ssaved \
	FSTPD (F0, F1), 184(RSP) \
	FSTPD (F2, F3), 200(RSP) \
	CMP  $4, R19 \
	BLE  ssaved \
	FSTPD (F4, F5), 216(RSP) \
	FSTPD (F6, F7), 232(RSP) \
	FSTPD (F8, F9), 248(RSP) \
	FSTPD (F10, F11), 264(RSP) \
	FSTPD (F12, F13), 280(RSP) \
	FSTPD (F14, F15), 296(RSP) \
ssaved:

#define RESTORE \
	MOVD CFG_NINT(R16), R19 \
	CBZ  R19, rflt \
	LDP  56(RSP), (R0, R1) \
	LDP  72(RSP), (R2, R3) \
	CMP  $4, R19 \
	BLE  rflt \
	LDP  88(RSP), (R4, R5) \
	LDP  104(RSP), (R6, R7) \
	CMP  $8, R19 \
	BLE  rflt \
	LDP  120(RSP), (R8, R9) \
	LDP  136(RSP), (R10, R11) \
	LDP  152(RSP), (R12, R13) \
	LDP  168(RSP), (R14, R15) \
rflt: \
	MOVD CFG_NFLT(R16), R19 \
	CBZ  R19, rrestored \
	FLDPD 184(RSP), (F0, F1) \
	FLDPD 200(RSP), (F2, F3) \
	CMP  $4, R19 \
	BLE  rrestored \
	FLDPD 216(RSP), (F4, F5) \
	FLDPD 232(RSP), (F6, F7) \
	FLDPD 248(RSP), (F8, F9) \
	FLDPD 264(RSP), (F10, F11) \
	FLDPD 280(RSP), (F12, F13) \
	FLDPD 296(RSP), (F14, F15) \
rrestored:

// entryBody: R16 the config, R17 argp (its prologue uses R20 at most). Frame:
// 8..48 the handlers' arguments and results, which they own (entryFast: cfg, argp, g,
// slow; entrySlow: cfg, argp, ctxt, g, slow, ctxt) | 56..183 R0..R15 | 184..311
// F0..F15 | 312 cfg | 320 g.stack.hi - argp | 328 R26.
//
// entryFast, nosplit Go with no safe point, counts the event and takes the entry
// time with the arguments only in this frame; the spill into the function's slots
// and entrySlow, which may reach a safe point, only when it says so (as on amd64).
TEXT ·entryBody(SB), NOSPLIT, $336-0
	NO_LOCAL_POINTERS
	SAVE
	MOVD R26, 328(RSP)        // the closure context, live or not: Go code clobbers it
	// The replaced SUB $8, RSP, R29: the function's frame pointer is its SP less a
	// word, argp less its frame and two words. It goes into the slot where this
	// body's prologue saved R29 (the caller's, the SUB not done): the frame pointer
	// chain then goes through the function, and the body's epilogue loads it into R29.
	MOVD CFG_FRAME(R16), R19
	SUB  R19, R17, R19
	SUB  $16, R19, R19
	MOVD R19, -8(RSP)
	MOVD R16, 312(RSP)
	MOVD 8(g), R19            // g.stack.hi
	SUB  R17, R19, R19
	MOVD R19, 320(RSP)        // argp's depth, which a stack move keeps
	MOVD R16, 8(RSP)
	MOVD R17, 16(RSP)
	MOVD g, 24(RSP)
	CALL ·entryFast(SB)
	MOVD 312(RSP), R16
	MOVD 32(RSP), R0          // slow
	CBZ  R0, erestore
	MOVD R0, 40(RSP)
	MOVD 8(g), R17
	MOVD 320(RSP), R19
	SUB  R19, R17, R17        // argp
	MOVD R16, 8(RSP)
	MOVD R17, 16(RSP)
	MOVD ZR, 24(RSP)
	MOVD CFG_CTXT(R16), R19
	CBZ  R19, 3(PC)
	MOVD 328(RSP), R19
	MOVD R19, 24(RSP)         // the closure context goes through the handler typed
	MOVD g, 32(RSP)
	// Spill the register arguments into the function's own spill slots, with the
	// widths its morestack block uses: its stack map 0 covers them.
	MOVD CFG_NSPILL(R16), R0
	ADD  $CFG_SPILLS, R16, R1
	ADD  $56, RSP, R5
espill:
	CBZ  R0, espilled
	MOVD.P 8(R1), R2
	MOVW R2, R3               // offset from argp (sign-extended)
	LSR  $40, R2, R4          // save slot
	MOVD (R5)(R4<<3), R6
	UBFX $32, R2, $8, R7      // size
	ADD  R3, R17, R8
	CMP  $8, R7
	BNE  es4
	MOVD R6, (R8)
	JMP  enext
es4:
	CMP  $4, R7
	BNE  es2
	MOVW R6, (R8)
	JMP  enext
es2:
	CMP  $2, R7
	BNE  es1
	MOVH R6, (R8)
	JMP  enext
es1:
	MOVB R6, (R8)
enext:
	SUB  $1, R0, R0
	JMP  espill
espilled:
	CALL ·entrySlow(SB)
	MOVD 312(RSP), R16
	MOVD CFG_CTXT(R16), R19
	CBZ  R19, 3(PC)
	MOVD 48(RSP), R19         // the context as the handler returned it: adjusted
	MOVD R19, 328(RSP)
	MOVD 8(g), R17
	MOVD 320(RSP), R19
	SUB  R19, R17, R17        // argp again: the stack may have moved
	// Reload what the slots hold now (a pointer into the stack was adjusted if the
	// stack moved), into the low bytes of each saved register.
	MOVD CFG_NSPILL(R16), R0
	ADD  $CFG_SPILLS, R16, R1
	ADD  $56, RSP, R5
ereload:
	CBZ  R0, erestore
	MOVD.P 8(R1), R2
	MOVW R2, R3
	LSR  $40, R2, R4
	ADD  R4<<3, R5, R9
	UBFX $32, R2, $8, R7
	ADD  R3, R17, R8
	CMP  $8, R7
	BNE  er4
	MOVD (R8), R6
	MOVD R6, (R9)
	JMP  rnext
er4:
	CMP  $4, R7
	BNE  er2
	MOVWU (R8), R6
	MOVW R6, (R9)
	JMP  rnext
er2:
	CMP  $2, R7
	BNE  er1
	MOVHU (R8), R6
	MOVH R6, (R9)
	JMP  rnext
er1:
	MOVBU (R8), R6
	MOVB R6, (R9)
rnext:
	SUB  $1, R0, R0
	JMP  ereload
erestore:
	RESTORE
	MOVD 328(RSP), R26
	// The epilogue reloads R29 (the function's frame pointer, as the SUB sets it) and
	// R30 (the function's next instruction) and returns there: an instruction of the
	// function whether or not the probe is still written.
	RET

// retStub is called by the BL written over an epilogue's first instruction (MOVD
// -8(RSP), R29, or LDP -8(RSP), (R29, R30)): R30 is dead there (the epilogue reloads
// it), R29 still the function's frame pointer, its frame allocated. It finds the config,
// computes argp into R17 and jumps to the framed body, which the unwinder sees called
// by the function from its epilogue, with its frame.
TEXT ·retStub(SB), NOSPLIT|NOFRAME, $0-0
	LOOKUP(rlook, rfound, rmissing)
	MOVD CFG_FRAME(R16), R17
	MOVD RSP, R19
	ADD  R19, R17, R17
	ADD  $8, R17, R17
	JMP  ·retBody(SB)

// retBody: R16 the config, R17 argp. Frame: 8 cfg | 16 argp | 24 g | 32 regs |
// 40..167 R0..R15 | 168..295 F0..F15 | 296 cfg. The handler is nosplit and calls
// nothing that is not: no safe point between the epilogue and the return, so result
// registers that hold pointers need no stack map. It leaves through retTail.
TEXT ·retBody(SB), NOSPLIT, $304-0
	NO_LOCAL_POINTERS
	SAVE_ARG_REGS
	MOVD R16, 296(RSP)
	RETURN_PROBE(R16)
	MOVD 296(RSP), R16
	// The replaced instruction's frame pointer: the one the function saved at -8 of
	// its SP, where its own frame pointer (saved by this body's prologue) points. The
	// body's epilogue restores it from its slot.
	MOVD -8(RSP), R19
	MOVD (R19), R19
	MOVD R19, -8(RSP)
	RET  ·retTail(SB)         // the body's epilogue, then a jump

// retTail completes the epilogue whose first instruction the call replaced: R30 from
// the frame, the frame popped (CFG_FRAME, the epilogue's own size), and returns to the
// function's caller. It writes RSP, so the assembler marks it SPWRITE: a profiling
// signal's traceback stops here; it calls nothing and is never preempted, so it is
// never anything but the innermost frame.
TEXT ·retTail(SB), NOSPLIT|NOFRAME, $0-0
	MOVD CFG_FRAME(R16), R17
	MOVD 0(RSP), R30
	ADD  R17, RSP, RSP
	RET

TEXT ·stubAddrs(SB), NOSPLIT, $0-16
	MOVD $·entryStub(SB), R0
	MOVD R0, entry+0(FP)
	MOVD $·retStub(SB), R0
	MOVD R0, ret+8(FP)
	RET
