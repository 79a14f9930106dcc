package arm64

import (
	"sync"
	"sync/atomic"
)

// The decoder's table: one row per encoding (or family of encodings) it knows, as the
// ARM ARM (DDI 0487, chapter C4, "A64 instruction set encoding") gives it: the bits
// that must match, what the instruction does to the general-purpose registers, and
// how control leaves it. A word no row matches is not an instruction the decoder
// knows, and the proofs stop there: nothing is guessed. ARMv8.0 is covered as far as
// Go's code uses it (the integer, load/store, branch and system instructions; scalar
// floating point; the vector instructions of Go's assembly), plus the traps and
// pointer-authenticated branches a proof must not walk past.

// row is an encoding: w matches when w&mask == value and form's check, if any, passes.
type row struct {
	mask, value uint32
	name        string
	fx          fx
	flow        flow
	form        form
}

// fx is what an instruction does to the general-purpose registers R0..R30, by the
// fields that name them. A field holding 31 names SP or ZR, never tracked.
type fx uint16

const (
	rd    fx = 1 << iota // reads the register in bits 4:0 (Rd, Rt)
	rn                   // reads bits 9:5 (Rn)
	rm                   // reads bits 20:16 (Rm, Rs)
	ra                   // reads bits 14:10 (Ra, Rt2)
	wd                   // writes bits 4:0
	wn                   // writes bits 9:5 (a base register's write-back)
	wm                   // writes bits 20:16 (a store-exclusive's status)
	wa                   // writes bits 14:10 (a pair's second register)
	wlr                  // writes X30 (BL, BLR)
	rlr                  // reads X30 (RETAA; the PAC hints)
	rall                 // may read every register (SVC: the kernel's arguments)
	r1716                // reads X16 and X17, writes X17 (PACIA1716 and its kin)
)

// flow is how control leaves an instruction.
type flow uint8

const (
	flowNext flow = iota // falls through
	flowB                // B: direct, unconditional
	flowBL               // BL: direct call
	flowCond             // B.cond, CBZ, CBNZ, TBZ, TBNZ: direct, conditional
	flowBR               // BR and its authenticated forms: indirect jump
	flowBLR              // BLR and its authenticated forms: indirect call
	flowRET              // RET, RETAA, RETAB
	flowTrap             // BRK, HLT, UDF, ERET: never falls through, no target
	flowSVC              // SVC: falls through after the kernel ran
	flowADR              // ADR: takes a label's address (Target)
	flowADRP             // ADRP: takes a page's address (Target)
)

// form is a check beyond mask and value (and for the load/store families, the
// register effect of Rt), for the encodings whose validity a mask cannot say.
type form uint8

const (
	formPlain    form = iota
	formLogImm        // logical immediate: a valid bit mask
	formNot11         // bits 31:30 are not 11 (the vector registers' sizes S, D, Q)
	formLogShift      // logical shifted register: a 32-bit shift amount below 32
	formAddShift      // add/sub shifted register: shift != ROR, a 32-bit amount below 32
	formAddExt        // add/sub extended register: shift amount <= 4
	formLdSt          // single-register load/store: size:V:opc decides Rt (fx has the base's part)
	formMulti         // vector load/store multiple structures
	formSingle        // vector load/store single structure
	formFP1           // floating-point data-processing, one source
	formFP2           // floating-point data-processing, two sources
	formSzQ           // vector arrangement by size:Q, 2D only with Q=1
	formSz3           // vector arrangement by size:Q, no 64-bit lanes
	formAcross        // across lanes: no D lanes, no 4S with Q=0
	formPmull         // PMULL: 8B or 1D
	formShift         // vector shift by immediate: immh != 0, D lanes only with Q=1
	formExt           // EXT: an index within the vector
	formDup           // DUP, INS (general and element): a valid imm5
	formSMOV          // SMOV: B or H into W, B, H or S into X
	formUMOV          // UMOV: B, H or S into W, D into X
)

// rows are the encodings the decoder knows. Within a word's bucket, the first row that
// matches wins: a row that must take precedence comes first.
var rows = [...]row{
	// Data processing, immediate (C4.1.86).
	{0x9F000000, 0x10000000, "ADR", wd, flowADR, 0},
	{0x9F000000, 0x90000000, "ADRP", wd, flowADRP, 0},
	{0x7F800000, 0x11000000, "ADD", rn | wd, 0, 0},
	{0x7F800000, 0x31000000, "ADDS", rn | wd, 0, 0},
	{0x7F800000, 0x51000000, "SUB", rn | wd, 0, 0},
	{0x7F800000, 0x71000000, "SUBS", rn | wd, 0, 0},
	{0x7F800000, 0x12000000, "AND", rn | wd, 0, formLogImm},
	{0x7F800000, 0x32000000, "ORR", rn | wd, 0, formLogImm},
	{0x7F800000, 0x52000000, "EOR", rn | wd, 0, formLogImm},
	{0x7F800000, 0x72000000, "ANDS", rn | wd, 0, formLogImm},
	{0xFF800000, 0x92800000, "MOVN", wd, 0, 0},
	{0xFFC00000, 0x12800000, "MOVN", wd, 0, 0},
	{0xFF800000, 0xD2800000, "MOVZ", wd, 0, 0},
	{0xFFC00000, 0x52800000, "MOVZ", wd, 0, 0},
	{0xFF800000, 0xF2800000, "MOVK", rd | wd, 0, 0},
	{0xFFC00000, 0x72800000, "MOVK", rd | wd, 0, 0},
	{0xFFC00000, 0x93400000, "SBFM", rn | wd, 0, 0},
	{0xFFE08000, 0x13000000, "SBFM", rn | wd, 0, 0},
	{0xFFC00000, 0xB3400000, "BFM", rd | rn | wd, 0, 0},
	{0xFFE08000, 0x33000000, "BFM", rd | rn | wd, 0, 0},
	{0xFFC00000, 0xD3400000, "UBFM", rn | wd, 0, 0},
	{0xFFE08000, 0x53000000, "UBFM", rn | wd, 0, 0},
	{0xFFE00000, 0x93C00000, "EXTR", rn | rm | wd, 0, 0},
	{0xFFE08000, 0x13800000, "EXTR", rn | rm | wd, 0, 0},

	// Branches, exception generating and system instructions (C4.1.87).
	{0xFC000000, 0x14000000, "B", 0, flowB, 0},
	{0xFC000000, 0x94000000, "BL", wlr, flowBL, 0},
	{0xFF000010, 0x54000000, "B.cond", 0, flowCond, 0},
	{0x7F000000, 0x34000000, "CBZ", rd, flowCond, 0},
	{0x7F000000, 0x35000000, "CBNZ", rd, flowCond, 0},
	{0x7F000000, 0x36000000, "TBZ", rd, flowCond, 0},
	{0x7F000000, 0x37000000, "TBNZ", rd, flowCond, 0},
	{0xFFE0001F, 0xD4000001, "SVC", rall, flowSVC, 0},
	{0xFFE0001F, 0xD4200000, "BRK", 0, flowTrap, 0},
	{0xFFE0001F, 0xD4400000, "HLT", 0, flowTrap, 0},
	{0xFFFF0000, 0x00000000, "UDF", 0, flowTrap, 0},
	{0xFFFFFFFF, 0xD503201F, "NOP", 0, 0, 0},
	{0xFFFFFFFF, 0xD50320FF, "XPACLRI", rlr | wlr, 0, 0},
	{0xFFFFFF1F, 0xD503201F, "HINT", 0, 0, 0}, // YIELD, WFE, WFI, SEV, SEVL, DGH
	{0xFFFFFF3F, 0xD503211F, "PACIA1716", r1716, 0, 0},
	{0xFFFFFF1F, 0xD503231F, "PACIASP", rlr | wlr, 0, 0}, // PAC/AUT IAZ, IASP, IBZ, IBSP
	{0xFFFFFF9F, 0xD503221F, "HINT", 0, 0, 0},            // ESB, PSB CSYNC, TSB CSYNC, #19
	{0xFFFFFFBF, 0xD503229F, "CSDB", 0, 0, 0},            // CSDB, CLRBHB
	{0xFFFFFF3F, 0xD503241F, "BTI", 0, 0, 0},
	{0xFFFFF0FF, 0xD503305F, "CLREX", 0, 0, 0},
	{0xFFFFF0FF, 0xD503309F, "DSB", 0, 0, 0},
	{0xFFFFF0FF, 0xD50330BF, "DMB", 0, 0, 0},
	{0xFFFFF0FF, 0xD50330DF, "ISB", 0, 0, 0},
	{0xFFFFFFE0, 0xD50B7420, "DC ZVA", rd, 0, 0}, // SYS: the cache maintenance Go's assembly does
	{0xFFFFFFE0, 0xD50B7A20, "DC CVAC", rd, 0, 0},
	{0xFFFFFFE0, 0xD50B7B20, "DC CVAU", rd, 0, 0},
	{0xFFFFFFE0, 0xD50B7E20, "DC CIVAC", rd, 0, 0},
	{0xFFF80000, 0xD5280000, "SYSL", wd, 0, 0},
	{0xFFF00000, 0xD5100000, "MSR", rd, 0, 0},
	{0xFFF00000, 0xD5300000, "MRS", wd, 0, 0},
	{0xFFFFFC1F, 0xD61F0000, "BR", rn, flowBR, 0},
	{0xFFFFFC1F, 0xD63F0000, "BLR", rn | wlr, flowBLR, 0},
	{0xFFFFFC1F, 0xD65F0000, "RET", rn, flowRET, 0},
	{0xFFFFFFFF, 0xD69F03E0, "ERET", 0, flowTrap, 0},
	{0xFFFFF81F, 0xD61F081F, "BRAAZ", rn, flowBR, 0}, // and BRABZ
	{0xFFFFF81F, 0xD63F081F, "BLRAAZ", rn | wlr, flowBLR, 0},
	{0xFFFFFBFF, 0xD65F0BFF, "RETAA", rlr, flowRET, 0}, // and RETAB
	{0xFFFFFBFF, 0xD69F0BFF, "ERETAA", 0, flowTrap, 0},
	{0xFFFFF800, 0xD71F0800, "BRAA", rn | rd, flowBR, 0}, // and BRAB
	{0xFFFFF800, 0xD73F0800, "BLRAA", rn | rd | wlr, flowBLR, 0},

	// Loads and stores (C4.1.88). Exclusive and ordered: B, H, W and X.
	{0x3FE08000, 0x08000000, "STXR", wm | rd | rn, 0, 0},
	{0x3FE08000, 0x08008000, "STLXR", wm | rd | rn, 0, 0},
	{0x3FE08000, 0x08400000, "LDXR", wd | rn, 0, 0},
	{0x3FE08000, 0x08408000, "LDAXR", wd | rn, 0, 0},
	{0x3FE08000, 0x08808000, "STLR", rd | rn, 0, 0},
	{0x3FE08000, 0x08C08000, "LDAR", wd | rn, 0, 0},
	{0xBFE08000, 0x88200000, "STXP", wm | rd | ra | rn, 0, 0},
	{0xBFE08000, 0x88208000, "STLXP", wm | rd | ra | rn, 0, 0},
	{0xBFE08000, 0x88600000, "LDXP", wd | wa | rn, 0, 0},
	{0xBFE08000, 0x88608000, "LDAXP", wd | wa | rn, 0, 0},
	// Literal.
	{0xBF000000, 0x18000000, "LDR", wd, 0, 0},
	{0xFF000000, 0x98000000, "LDRSW", wd, 0, 0},
	{0xFF000000, 0xD8000000, "PRFM", 0, 0, 0},
	{0x3F000000, 0x1C000000, "LDR", 0, 0, formNot11}, // S, D, Q
	// Pairs: no-allocate, post-index, offset, pre-index.
	{0x7FC00000, 0x28000000, "STNP", rd | ra | rn, 0, 0},
	{0x7FC00000, 0x28400000, "LDNP", wd | wa | rn, 0, 0},
	{0x7FC00000, 0x28800000, "STP", rd | ra | rn | wn, 0, 0},
	{0x7FC00000, 0x28C00000, "LDP", wd | wa | rn | wn, 0, 0},
	{0xFFC00000, 0x68C00000, "LDPSW", wd | wa | rn | wn, 0, 0},
	{0x7FC00000, 0x29000000, "STP", rd | ra | rn, 0, 0},
	{0x7FC00000, 0x29400000, "LDP", wd | wa | rn, 0, 0},
	{0xFFC00000, 0x69400000, "LDPSW", wd | wa | rn, 0, 0},
	{0x7FC00000, 0x29800000, "STP", rd | ra | rn | wn, 0, 0},
	{0x7FC00000, 0x29C00000, "LDP", wd | wa | rn | wn, 0, 0},
	{0xFFC00000, 0x69C00000, "LDPSW", wd | wa | rn | wn, 0, 0},
	{0x3FC00000, 0x2C000000, "STNP", rn, 0, formNot11}, // S, D, Q
	{0x3FC00000, 0x2C400000, "LDNP", rn, 0, formNot11},
	{0x3FC00000, 0x2C800000, "STP", rn | wn, 0, formNot11},
	{0x3FC00000, 0x2CC00000, "LDP", rn | wn, 0, formNot11},
	{0x3FC00000, 0x2D000000, "STP", rn, 0, formNot11},
	{0x3FC00000, 0x2D400000, "LDP", rn, 0, formNot11},
	{0x3FC00000, 0x2D800000, "STP", rn | wn, 0, formNot11},
	{0x3FC00000, 0x2DC00000, "LDP", rn | wn, 0, formNot11},
	// Single register: unscaled, post-index, unprivileged, pre-index; unsigned offset;
	// register offset.
	{0x3B200C00, 0x38000000, "LDUR", rn, 0, formLdSt},
	{0x3B200C00, 0x38000400, "LDR", rn | wn, 0, formLdSt},
	{0x3B200C00, 0x38000800, "LDTR", rn, 0, formLdSt},
	{0x3B200C00, 0x38000C00, "LDR", rn | wn, 0, formLdSt},
	{0x3B000000, 0x39000000, "LDR", rn, 0, formLdSt},
	{0x3B204C00, 0x38204800, "LDR", rn | rm, 0, formLdSt},
	// Vector structures: multiple, single; no offset, post-index.
	{0xBFBF0000, 0x0C000000, "LD1", rn, 0, formMulti},
	{0xBFA00000, 0x0C800000, "LD1", rn | rm | wn, 0, formMulti},
	{0xBF9F0000, 0x0D000000, "LD1", rn, 0, formSingle},
	{0xBF800000, 0x0D800000, "LD1", rn | rm | wn, 0, formSingle},

	// Data processing, register (C4.1.89).
	{0x1F000000, 0x0A000000, "AND", rn | rm | wd, 0, formLogShift}, // logical shifted register: AND, BIC, ORR, ORN, EOR, EON, ANDS, BICS
	{0x1F200000, 0x0B000000, "ADD", rn | rm | wd, 0, formAddShift}, // ADD, ADDS, SUB, SUBS
	{0x1FE00000, 0x0B200000, "ADD", rn | rm | wd, 0, formAddExt},
	{0x1FE0FC00, 0x1A000000, "ADC", rn | rm | wd, 0, 0},         // ADC, ADCS, SBC, SBCS
	{0x3FE00C10, 0x3A400000, "CCMP", rn | rm, 0, 0},             // CCMN, CCMP
	{0x3FE00C10, 0x3A400800, "CCMP", rn, 0, 0},                  // immediate
	{0x3FE00800, 0x1A800000, "CSEL", rn | rm | wd, 0, 0},        // CSEL, CSINC, CSINV, CSNEG
	{0x7FE00000, 0x1B000000, "MADD", rn | rm | ra | wd, 0, 0},   // and MSUB
	{0xFF600000, 0x9B200000, "SMADDL", rn | rm | ra | wd, 0, 0}, // SMADDL, SMSUBL, UMADDL, UMSUBL
	{0xFF608000, 0x9B400000, "SMULH", rn | rm | wd, 0, 0},       // and UMULH
	{0x7FE0F800, 0x1AC00800, "UDIV", rn | rm | wd, 0, 0},        // and SDIV
	{0x7FE0F000, 0x1AC02000, "LSLV", rn | rm | wd, 0, 0},        // LSLV, LSRV, ASRV, RORV
	{0xFFE0E800, 0x1AC04000, "CRC32", rn | rm | wd, 0, 0},       // CRC32{,C}{B,H}
	{0xFFE0EC00, 0x1AC04800, "CRC32W", rn | rm | wd, 0, 0},
	{0xFFE0EC00, 0x9AC04C00, "CRC32X", rn | rm | wd, 0, 0},
	{0x7FFFF800, 0x5AC00000, "RBIT", rn | wd, 0, 0}, // and REV16
	{0xFFFFFC00, 0x5AC00800, "REV", rn | wd, 0, 0},
	{0xFFFFF800, 0xDAC00800, "REV", rn | wd, 0, 0}, // REV32, REV
	{0x7FFFF800, 0x5AC01000, "CLZ", rn | wd, 0, 0}, // and CLS

	// Scalar floating point and vectors (C4.1.90), single and double precision.
	{0xFFA07C00, 0x1E204000, "FMOV", 0, 0, formFP1}, // FMOV, FABS, FNEG, FSQRT, FCVT, FRINT*
	{0xFFA0FC07, 0x1E202000, "FCMP", 0, 0, 0},       // FCMP, FCMPE
	{0xFFA01FE0, 0x1E201000, "FMOV", 0, 0, 0},       // immediate
	{0xFFA00C00, 0x1E200400, "FCCMP", 0, 0, 0},
	{0xFFA00C00, 0x1E200800, "FMUL", 0, 0, formFP2},
	{0xFFA00C00, 0x1E200C00, "FCSEL", 0, 0, 0},
	{0xFF800000, 0x1F000000, "FMADD", 0, 0, 0},   // FMADD, FMSUB, FNMADD, FNMSUB
	{0x7FA6FC00, 0x1E200000, "FCVTNS", wd, 0, 0}, // FCVT{N,P,M,Z}{S,U} into a general register
	{0x7FBEFC00, 0x1E240000, "FCVTAS", wd, 0, 0}, // and FCVTAU
	{0x7FBEFC00, 0x1E220000, "SCVTF", rn, 0, 0},  // and UCVTF
	{0xFFFFFC00, 0x1E260000, "FMOV", wd, 0, 0},   // Wd, Sn
	{0xFFFFFC00, 0x1E270000, "FMOV", rn, 0, 0},   // Sd, Wn
	{0xFFFFFC00, 0x9E660000, "FMOV", wd, 0, 0},   // Xd, Dn
	{0xFFFFFC00, 0x9E670000, "FMOV", rn, 0, 0},   // Dd, Xn
	{0xFFFFFC00, 0x9EAE0000, "FMOV", wd, 0, 0},   // Xd, Vn.D[1]
	{0xFFFFFC00, 0x9EAF0000, "FMOV", rn, 0, 0},   // Vd.D[1], Xn
	{0xFFBE0000, 0x9E020000, "SCVTF", rn, 0, 0},  // fixed point, and UCVTF
	{0xFFBE8000, 0x1E028000, "SCVTF", rn, 0, 0},
	{0xFFBE0000, 0x9E180000, "FCVTZS", wd, 0, 0}, // fixed point, and FCVTZU
	{0xFFBE8000, 0x1E188000, "FCVTZS", wd, 0, 0},
	// Vectors: the instructions of Go's assembly (crypto, bytes, math/big, runtime).
	{0xBFE0FC00, 0x0E000400, "DUP", 0, 0, formDup},  // element
	{0xBFE0FC00, 0x0E000C00, "DUP", rn, 0, formDup}, // general
	{0xFFE0FC00, 0x5E000400, "DUP", 0, 0, formDup},  // scalar, from an element (MOV S1, V20.S[0])
	{0xFFE0FC00, 0x4E001C00, "INS", rn, 0, formDup}, // general
	{0xFFE08400, 0x6E000400, "INS", 0, 0, formDup},  // element
	{0xBFE0FC00, 0x0E002C00, "SMOV", wd, 0, formSMOV},
	{0xBFE0FC00, 0x0E003C00, "UMOV", wd, 0, formUMOV},
	{0x9F20FC00, 0x0E201C00, "AND", 0, 0, 0},       // AND, BIC, ORR, ORN, EOR, BSL, BIT, BIF
	{0x9F20FC00, 0x0E208400, "ADD", 0, 0, formSzQ}, // and SUB
	{0xDFE0FC00, 0x5EE08400, "ADD", 0, 0, 0},       // scalar D, and SUB
	{0xBF20FC00, 0x0E20BC00, "ADDP", 0, 0, formSzQ},
	{0xBF20FC00, 0x2E208C00, "CMEQ", 0, 0, formSzQ},
	{0xBF20BC00, 0x0E001800, "UZP1", 0, 0, formSzQ}, // UZP1, TRN1, ZIP1, UZP2, TRN2, ZIP2
	{0xBF20BC00, 0x0E002800, "TRN1", 0, 0, formSzQ},
	{0xBF20BC00, 0x0E003800, "ZIP1", 0, 0, formSzQ},
	{0xBFE08400, 0x2E000000, "EXT", 0, 0, formExt},
	{0xBFE08C00, 0x0E000000, "TBL", 0, 0, 0}, // and TBX
	{0xFF20FC00, 0x0E20E000, "PMULL", 0, 0, formPmull},
	{0xFF20FC00, 0x4E20E000, "PMULL2", 0, 0, formPmull},
	{0xBFBFFC00, 0x2E200800, "REV32", 0, 0, 0},
	{0xBF3FFC00, 0x0E200800, "REV64", 0, 0, formSz3},
	{0xBFFFFC00, 0x0E205800, "CNT", 0, 0, 0},
	{0xBF3FFC00, 0x2E303800, "UADDLV", 0, 0, formAcross},
	{0xBF80FC00, 0x0F005400, "SHL", 0, 0, formShift},
	{0xBF80FC00, 0x2F004400, "SRI", 0, 0, formShift},
	{0xBF80FC00, 0x2F000400, "USHR", 0, 0, formShift},
	{0xFFFFCC00, 0x4E284800, "AESE", 0, 0, 0},    // AESE, AESD, AESMC, AESIMC
	{0xFFE0CC00, 0x5E000000, "SHA1C", 0, 0, 0},   // SHA1C, SHA1P, SHA1M, SHA1SU0
	{0xFFE0EC00, 0x5E004000, "SHA256H", 0, 0, 0}, // and SHA256H2
	{0xFFE0FC00, 0x5E006000, "SHA256SU1", 0, 0, 0},
	{0xFFFFEC00, 0x5E280800, "SHA1H", 0, 0, 0}, // and SHA1SU1
	{0xFFFFFC00, 0x5E282800, "SHA256SU0", 0, 0, 0},
}

// The bucket of a word is its top 11 bits: every row is listed in each bucket whose
// words it may match, in row order.
const bucketShift = 21

type index struct {
	start [1<<(32-bucketShift) + 1]uint16
	rows  []uint16
}

// tableIndex is table's result once built, for decodeWord to read without a call.
var tableIndex atomic.Pointer[index]

// table returns the index of rows by bucket, built when first needed: a program whose
// sites came sealed never decodes.
var table = sync.OnceValue(func() *index {
	x := buildIndex()
	tableIndex.Store(x)
	return x
})

func buildIndex() *index {
	x := new(index)
	const top = 1<<(32-bucketShift) - 1
	each := func(r *row, f func(b uint32)) {
		m, v := r.mask>>bucketShift, r.value>>bucketShift
		free := ^m & top
		for s := uint32(0); ; s = (s - free) & free { // every subset of the free bits
			f(v | s)
			if s == free {
				break
			}
		}
	}
	var count [1 << (32 - bucketShift)]uint16
	for i := range rows {
		each(&rows[i], func(b uint32) { count[b]++ })
	}
	for b, n := range count {
		x.start[b+1] = x.start[b] + n
	}
	x.rows = make([]uint16, x.start[len(count)])
	next := x.start
	for i := range rows {
		each(&rows[i], func(b uint32) { x.rows[next[b]] = uint16(i); next[b]++ })
	}
	return x
}
