// Shared by the stubs that keep a function's register arguments or results across a
// call into Go (leafBody, jretBody, retBody): ABIInternal's R0-R15 at 40..167(RSP) and
// F0-F15 at 168..295(RSP) of the stub's frame, with no gap below them (the nosplit
// chains under these stubs have no word to spare with -N -l).

#define SAVE_ARG_REGS \
	STP (R0, R1), 40(RSP); \
	STP (R2, R3), 56(RSP); \
	STP (R4, R5), 72(RSP); \
	STP (R6, R7), 88(RSP); \
	STP (R8, R9), 104(RSP); \
	STP (R10, R11), 120(RSP); \
	STP (R12, R13), 136(RSP); \
	STP (R14, R15), 152(RSP); \
	FSTPD (F0, F1), 168(RSP); \
	FSTPD (F2, F3), 184(RSP); \
	FSTPD (F4, F5), 200(RSP); \
	FSTPD (F6, F7), 216(RSP); \
	FSTPD (F8, F9), 232(RSP); \
	FSTPD (F10, F11), 248(RSP); \
	FSTPD (F12, F13), 264(RSP); \
	FSTPD (F14, F15), 280(RSP)

#define RESTORE_ARG_REGS \
	LDP 40(RSP), (R0, R1); \
	LDP 56(RSP), (R2, R3); \
	LDP 72(RSP), (R4, R5); \
	LDP 88(RSP), (R6, R7); \
	LDP 104(RSP), (R8, R9); \
	LDP 120(RSP), (R10, R11); \
	LDP 136(RSP), (R12, R13); \
	LDP 152(RSP), (R14, R15); \
	FLDPD 168(RSP), (F0, F1); \
	FLDPD 184(RSP), (F2, F3); \
	FLDPD 200(RSP), (F4, F5); \
	FLDPD 216(RSP), (F6, F7); \
	FLDPD 232(RSP), (F8, F9); \
	FLDPD 248(RSP), (F10, F11); \
	FLDPD 264(RSP), (F12, F13); \
	FLDPD 280(RSP), (F14, F15)

// RETURN_EVENT is the return stubs' (retBody, jretBody) call of the return handler,
// whose arguments the stub has set from 8(RSP), and what follows it: while some
// function has a trace its return path writes (directOn, direct.go), the predicates
// of those traces (retWhere, while whereOn: where.go) and the write (retDirect),
// each given the saved result registers at 40(RSP); then the registers restored.
#define RETURN_EVENT \
	CALL ·retHandler(SB); \
	MOVD ·directOn(SB), R19; \
	CBZ  R19, retnodirect; \
	MOVD ·whereOn(SB), R19; \
	CBZ  R19, retwrite; \
	ADD  $40, RSP, R19; \
	MOVD R19, 8(RSP); \
	CALL ·retWhere(SB); \
retwrite: \
	ADD  $40, RSP, R19; \
	MOVD R19, 8(RSP); \
	CALL ·retDirect(SB); \
retnodirect: \
	RESTORE_ARG_REGS

// RETURN_PROBE(cfg) is what both return stubs (retBody, jretBody) run once they have
// saved the result registers: retHandler's arguments (cfg, argp in R17, g, the saved
// registers) and RETURN_EVENT.
#define RETURN_PROBE(cfg) \
	MOVD cfg, 8(RSP); \
	MOVD R17, 16(RSP); \
	MOVD g, 24(RSP); \
	ADD  $40, RSP, R19; \
	MOVD R19, 32(RSP); \
	RETURN_EVENT
