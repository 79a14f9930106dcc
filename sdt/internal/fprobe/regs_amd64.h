// Shared by the stubs that keep a function's register arguments or results across a
// call into Go (leafBody, jretBody, retBody): ABIInternal's integer registers AX, BX,
// CX, DI, SI, R8-R11 at 32..103(SP) and X0-X14 at 104..223(SP) of the stub's frame.
// DX (a closure's context), R12-R15 and X15 are each stub's own concern.

#define SAVE_ARG_REGS \
	MOVQ AX, 32(SP); \
	MOVQ BX, 40(SP); \
	MOVQ CX, 48(SP); \
	MOVQ DI, 56(SP); \
	MOVQ SI, 64(SP); \
	MOVQ R8, 72(SP); \
	MOVQ R9, 80(SP); \
	MOVQ R10, 88(SP); \
	MOVQ R11, 96(SP); \
	MOVSD X0, 104(SP); \
	MOVSD X1, 112(SP); \
	MOVSD X2, 120(SP); \
	MOVSD X3, 128(SP); \
	MOVSD X4, 136(SP); \
	MOVSD X5, 144(SP); \
	MOVSD X6, 152(SP); \
	MOVSD X7, 160(SP); \
	MOVSD X8, 168(SP); \
	MOVSD X9, 176(SP); \
	MOVSD X10, 184(SP); \
	MOVSD X11, 192(SP); \
	MOVSD X12, 200(SP); \
	MOVSD X13, 208(SP); \
	MOVSD X14, 216(SP)

#define RESTORE_ARG_REGS \
	MOVQ 32(SP), AX; \
	MOVQ 40(SP), BX; \
	MOVQ 48(SP), CX; \
	MOVQ 56(SP), DI; \
	MOVQ 64(SP), SI; \
	MOVQ 72(SP), R8; \
	MOVQ 80(SP), R9; \
	MOVQ 88(SP), R10; \
	MOVQ 96(SP), R11; \
	MOVSD 104(SP), X0; \
	MOVSD 112(SP), X1; \
	MOVSD 120(SP), X2; \
	MOVSD 128(SP), X3; \
	MOVSD 136(SP), X4; \
	MOVSD 144(SP), X5; \
	MOVSD 152(SP), X6; \
	MOVSD 160(SP), X7; \
	MOVSD 168(SP), X8; \
	MOVSD 176(SP), X9; \
	MOVSD 184(SP), X10; \
	MOVSD 192(SP), X11; \
	MOVSD 200(SP), X12; \
	MOVSD 208(SP), X13; \
	MOVSD 216(SP), X14

// RETURN_EVENT is the return stubs' (retBody, jretBody) call of the return handler,
// whose arguments the stub has set at 0..31(SP), and what follows it: while some
// function has a trace its return path writes (directOn, direct.go), the predicates
// of those traces (retWhere, while whereOn: where.go) and the write (retDirect),
// each given the saved result registers at 32(SP); then the registers restored.
#define RETURN_EVENT \
	CALL ·retHandler(SB); \
	CMPQ ·directOn(SB), $0; \
	JEQ  retnodirect; \
	CMPQ ·whereOn(SB), $0; \
	JEQ  retwrite; \
	LEAQ 32(SP), R13; \
	MOVQ R13, 0(SP); \
	CALL ·retWhere(SB); \
retwrite: \
	LEAQ 32(SP), R13; \
	MOVQ R13, 0(SP); \
	CALL ·retDirect(SB); \
retnodirect: \
	RESTORE_ARG_REGS

// RETURN_PROBE(cfg) is what both return stubs (retBody, jretBody) run once they have
// saved the result registers: retHandler's arguments (cfg; argp, 24(BP), above the
// stub's return address and the caller's; g; the saved registers), RETURN_EVENT, and
// g and X15 as Go code wants them after. g is kept apart at 224(SP) too: the handler
// owns its argument slots.
#define RETURN_PROBE(cfg) \
	MOVQ cfg, 0(SP); \
	LEAQ 24(BP), R13; \
	MOVQ R13, 8(SP); \
	MOVQ R14, 16(SP); \
	MOVQ R14, 224(SP); \
	LEAQ 32(SP), R13; \
	MOVQ R13, 24(SP); \
	RETURN_EVENT; \
	MOVQ 224(SP), R14; \
	XORPS X15, X15
