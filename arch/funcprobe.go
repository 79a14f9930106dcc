package arch

// Function probes: a probe on any function's entry and returns, placed at run time by
// writing a call to a stub over instructions of the function's prologue and epilogues
// (package sdt/internal/fprobe has the stubs and the argument for their safety). What
// an architecture's description says of a function's code for that: where the call
// goes, what it replaces, and what the stub must do in the replaced code's place.

// LeafEntry is where a function without a stack check (a leaf) may take a jump to a
// per-site slot: its first instruction, which the decoder proved runs the same at
// another pc and cannot fault, and which the slot runs in its place before jumping
// back to Resume.
type LeafEntry struct {
	Addr   uint64 // where the jump is written: the entry, or past loads that run in place (Before)
	Orig   []byte // the displaced instruction
	Resume uint64 // the instruction after it
	// Rel, when not 0, says the displaced instruction addresses memory relative to its
	// own pc: its displacement (amd64: the disp32 at byte Rel-1 of Orig; arm64: ADRP's
	// page, Rel 1) must be re-encoded for the slot so that it still names Target.
	Rel    int
	Target uint64
	// ArgReads has bit j set for word j of the argument area (the stack arguments,
	// then the register arguments' spill slots, from the first word above the return
	// address) if the function's code may read it; all ones when the decoder cannot
	// tell (SP copied, or an address taken).
	ArgReads uint64
	// LiveIn, where Known, has bit n set for each general-purpose register n (the
	// architecture's numbering) the function may read before it writes it: its
	// register arguments that it uses are among them. arm64 only.
	LiveIn      uint32
	LiveInKnown bool
	// Before, where Addr is past the entry, has bit n set for each general-purpose
	// register n the instructions from the entry to Addr write: they run in place,
	// before the probe (loads and stores that may fault, which must fault at the
	// function's own pc), so their values are live at the slot and are not the
	// function's arguments. arm64 only.
	Before uint32
	// Pun: the displaced instruction is shorter than the jump (amd64: under 5 bytes).
	// Only its first byte is written, the jump's opcode, whose displacement is the 4
	// bytes after it as they stand (the rest of the instruction and the next ones):
	// every instruction after the first stays whole where a goroutine may be parked
	// on it, and the jump goes where those bytes say, to a trampoline mapped there.
	// Those bytes are the function's own and must not change while the jump is in.
	Pun bool
}

// FuncEntry is how a function's entry takes a probe.
type FuncEntry struct {
	Addr uint64 // where the call to the entry stub is written
	Orig []byte // the bytes it replaces (the call, then NOPs to Resume)
	// Resume is where the stub returns to: an instruction boundary of the function both
	// as compiled and as patched, so that a stub whose probe is taken away while it
	// runs returns to an instruction that is still there.
	Resume uint64
	// Check is the displacement from the entry's SP of the address the prologue
	// compares with the stack guard: 0 compares SP itself (amd64's small frames);
	// negative, a large frame's LEAQ -N(SP), R12, which the stub computes in R12 as the
	// function would have. amd64 only: the stub performs the stack check the call
	// replaced, and goes to Morestack when it fails.
	Check int64
	// Morestack is the function's morestack block: it spills the register arguments,
	// calls runtime.morestack(_noctxt) and jumps back to the entry.
	Morestack uint64
	// Frame is the bytes the prologue has allocated when the stub is called (arm64:
	// the call replaces the frame pointer's setup, after the frame exists); 0 on amd64.
	Frame int64
	// Context reports that the closure context register is live at entry: the block
	// calls runtime.morestack, not runtime.morestack_noctxt.
	Context bool
	// Spills are the register arguments, as the morestack block stores them.
	Spills []Spill
}

// Spill is one register argument as the function's morestack block stores it into
// its spill slot, which the garbage collector reads at entry (the function's stack
// map 0 marks the slots of live pointer arguments).
type Spill struct {
	Reg  uint8 // integer argument register i (ABI order: 0 is AX or R0), or FloatReg+i
	Size uint8 // bytes stored: 1, 2, 4 or 8
	Off  int32 // from the first argument slot: the caller's SP at entry plus a word
}

// FloatReg is Spill.Reg's first floating-point register.
const FloatReg = 32

// SameSpills reports whether a morestack block's reloads restore exactly what it
// spilled, in any order.
func SameSpills(spills, reloads []Spill) bool {
	if len(spills) != len(reloads) {
		return false
	}
	for _, s := range spills {
		found := false
		for _, r := range reloads {
			found = found || r == s
		}
		if !found {
			return false
		}
	}
	return true
}

// FuncReturn is one return of a function in a shape that takes a probe.
type FuncReturn struct {
	Addr uint64 // where the call to the return stub is written
	Orig []byte // the bytes it replaces
	// Frame is the frame the epilogue pops (amd64: ADDQ's immediate; arm64: the
	// frame size), which the stub pops for it.
	Frame int64
	// Ret is the return instruction the function ends with, where it returns to its
	// caller: the stub's own return goes there.
	Ret uint64
	// Pad: the call cannot be written whole without changing an instruction a parked
	// goroutine may resume at, so it must reach the stub through a pad whose distance
	// keeps that instruction's byte (amd64: ADDQ $imm8, SP; POPQ BP is five bytes, and
	// the call's last byte must stay POPQ's 5D).
	Pad bool
	// Restores is what the replaced instruction restores besides the frame (arm64:
	// the frame pointer, or the frame pointer and the link register), which the stub
	// restores for it.
	Restores string
	// Pun: a return by a jump (RetJump) over a RET with no room after it: only the
	// RET's byte becomes the jump's opcode, whose displacement is the 4 bytes after it
	// as they stand (amd64; LeafEntry.Pun says why).
	Pun bool
}
