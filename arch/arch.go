// Package arch is the shape of an instruction set's description for gosdt's discovery
// (Arch) and for reading its binaries (Offline), and the values they work on;
// arch/amd64 and arch/arm64 each export one of both.
package arch

import (
	"slices"
	"sort"
)

// Arch is one instruction set as discovery (package sled) uses it. Every function is
// pure over the bytes a Memory returns: no unsafe, no syscalls, so both descriptions
// build and run on every host (sdtctl reads either architecture's binaries anywhere).
// Errors about code are *ShapeError.
type Arch struct {
	Name    string // GOARCH: "amd64", "arm64"
	Machine uint16 // the ELF e_machine of its binaries

	// Candidates returns the flag checks that start at offsets lo..hi-1 of text, whose
	// first byte is at address base: a search on raw bytes, so that parts of a large
	// text can be searched in parallel. A candidate may not even be code.
	Candidates func(text []byte, base uint64, lo, hi int) []Check

	// NewCache returns a Memory over m for one goroutine: it may remember what it
	// decoded until Reset, which discovery calls between candidates.
	NewCache func(m Memory) Cache

	// Follow reads the code after a check as a site's: the conditional branch that
	// tests the flag, and where it goes. It decodes from c.Addr, not knowing whether
	// that is an instruction boundary (Match proves it). On error the Site's Check is
	// c and its Addr the site the check would have been (0 where there is none).
	Follow func(m Memory, c Check) (Site, error)

	// GuardedCall follows the straight-line code from start (a few direct jumps
	// allowed) to the first direct call whose target pass does not pass (pass may be
	// nil), and says what it learned on the way. A conditional branch, return,
	// indirect transfer or trap before that call is an error.
	GuardedCall func(m Memory, start uint64, pass func(target uint64) bool) (Guarded, error)

	// Walk walks the function [entry, end) (end is the next function's entry, so
	// padding may come before it): where its instructions start and where its direct
	// branches go. Walked through a Cache, the result lives in the cache's memory and
	// is valid until the next Walk through it.
	Walk func(m Memory, entry, end uint64) (*Walked, error)

	// Match proves a followed site against its walked function: its instructions are
	// the function's, on its boundaries, of the exact shape, and no branch lands inside.
	Match func(m Memory, w *Walked, s Site) error

	// Seal proves what the sled relies on at both of its targets (amd64: the flags are
	// dead; arm64: whether the flag register is, so that its load can go too) and
	// encodes the sled. call says what a call in the code it reads does.
	Seal func(m Memory, s Site, call func(target uint64) CallEffect) (Sled, error)

	// Jumps reports whether a toggle's bytes are its jump form.
	Jumps func(toggle []byte) bool

	// Sealed reads the code at pc, of the walked function w, as a site sealed in the
	// file (sdtctl seal) in its disabled form, for a site whose fire block follows it
	// (JE, CBZ, TBZ: the toggle jumps over the block): the bytes from pc are exactly the
	// canonical sled (Seal) of a site at pc whose toggle jumps where the one in the file
	// does, on instruction boundaries of w, and no branch of w lands inside it or on
	// the code after it, which only the enabled form falls into. It returns that site,
	// whose Check is unknown (Reg and Tmp -1), and its sled; false for anything else.
	// Discovery reads a sealed binary's sites this way when its site table cannot be
	// used; the caller proves the block a fire block.
	Sealed func(m Memory, w *Walked, pc uint64) (Site, Sled, bool)

	// Uprobed reports whether text is sled with a tracer's uprobe in its probe NOP
	// (Offline.ProbeNOP): an INT3, or the CALL of the kernel's fast path; nil where
	// the architecture has no probe NOP.
	Uprobed func(sled, text []byte) bool

	// Rejoins reports whether the straight-line code from pc reaches to, a few direct
	// jumps allowed and the calls that pass passes stepped over, before any other call,
	// conditional branch, return, indirect transfer or trap.
	Rejoins func(m Memory, pc, to uint64, pass func(target uint64) bool) bool
}

// FuncProbes is what function probes need of an architecture beyond discovery (the
// shapes in funcprobe.go): apart from Arch, so that only a program that places them
// links it.
type FuncProbes struct {
	*Arch
	// FuncEntry reads the prologue and the morestack block of the walked function as
	// an entry probe takes them; name names the function at a pc.
	FuncEntry func(m Memory, w *Walked, name func(pc uint64) string) (FuncEntry, error)
	// FuncReturns finds every return of the walked function, each in a shape a return
	// probe takes, or says why one is not.
	FuncReturns func(m Memory, w *Walked) ([]FuncReturn, error)
	// LeafEntry says whether the entry of the walked function, one without a stack
	// check, can be replaced by a jump to a per-site slot that runs its first
	// instruction out of line (fprobe's DESIGN.md, "Leaves"), or why not. The caller
	// refuses assembly functions first (their registers at entry follow no ABI).
	LeafEntry func(m Memory, w *Walked) (LeafEntry, error)
	// RetJump says whether the walked function's returns can each be replaced by a
	// jump to a per-site slot, taken where the function's frame is gone (a leaf's, or
	// one whose epilogue FuncReturns refuses), or why not; code is where the
	// function's pc tables end (its code before the linker's padding). Addr and Ret
	// are the return, Orig the bytes the jump replaces. nil where there is no such way.
	RetJump func(m Memory, w *Walked, code uint64) ([]FuncReturn, error)
	// CallTo encodes a call at pc to target padded to n bytes; nil when target is out
	// of the call's reach or n cannot hold it.
	CallTo func(pc, target uint64, n int) []byte
}

// Offline is what reading an architecture's binary files needs beyond discovery
// (sdtctl list and seal): apart from Arch, so that no traced process links it.
type Offline struct {
	*Arch
	ArgRegs []string // Go's ABIInternal integer argument registers, in order, as USDT argument specs name them ("%rax", "x0")

	// CallBefore returns the address and target of the direct call instruction that
	// returns to ret, or an error if the code before ret is not one.
	CallBefore func(m Memory, ret uint64) (pc, target uint64, err error)

	// Calls decodes the function [entry, end) and returns its direct calls to targets
	// that want accepts, with the constants its code put in the argument registers
	// and where it stores the result's low byte right after (see Call). name names the
	// function at a pc, for the calls the race detector inserts around that store.
	Calls func(m Memory, entry, end uint64, want func(target uint64) bool, name func(pc uint64) string) []Call

	// ProbeNOP returns the offset in a JE site's enabled sled on, at addr, of the NOP
	// its enabled form runs just before the fire block, on which the kernel's fast
	// uprobe path applies (amd64's 5-byte NOP), or -1 if it has none (arm64 has no such
	// path). sdtctl seal puts the site's USDT note there.
	ProbeNOP func(on []byte, addr uint64) int

	// ArgsAt returns where the values the straight-line code from pc puts in the
	// argument registers want (indexes into ArgRegs) before the call at call were at
	// pc, or an error if it cannot name one; nil where the architecture has no
	// ProbeNOP.
	ArgsAt func(m Memory, pc, call uint64, want []int) ([]ArgLoc, error)
}

// ArgLoc is where a value is, as a USDT argument spec names it.
type ArgLoc struct {
	Operand string // a register or memory operand in the tracer's syntax ("%r8", "40(%rsp)"); "" for a constant
	Const   bool   // the value is Value
	Value   uint64
	Bytes   int  // the low bytes of the value that Operand holds: a note may read at most these
	Static  bool // Value is a link-time address: right only where the binary runs at its link address
}

// Check is a candidate found by a search of raw bytes: code that reads the byte at
// Flag, if it is code at all.
type Check struct {
	Addr uint64 // its first byte: the CMPB (amd64), the ADRP of the flag load (arm64)
	Len  int    // its bytes: 7 (CMPB), 8 or 12 (ADRP, [ADD,] LDRB)
	Flag uint64 // the byte it reads
	Reg  int    // the register the byte is loaded into (arm64's Wn); -1 when it is tested in place
	Tmp  int    // the register that holds the byte's page (arm64's ADRP); -1 if none
}

// End is the address after the check.
func (c Check) End() uint64 { return c.Addr + uint64(c.Len) }

// Site is a check followed to the conditional branch that tests its flag: the code a
// sled replaces.
type Site struct {
	Check         // the flag's read
	Addr   uint64 // the sled's first byte: the CMPB (amd64), the branch (arm64)
	Len    int    // bytes the sled replaces
	Taken  uint64 // the branch's target
	OnZero bool   // the branch is taken when the flag is clear (JE, CBZ, TBZ): Taken skips the fire block
	Branch string // the branch's mnemonic, for messages: "JE", "CBNZ"
}

// Next is the fall-through after the site.
func (s Site) Next() uint64 { return s.Addr + uint64(s.Len) }

// Fire is where control goes when the flag is set.
func (s Site) Fire() uint64 {
	if s.OnZero {
		return s.Next()
	}
	return s.Taken
}

// Skip is where control goes when the flag is clear.
func (s Site) Skip() uint64 {
	if s.OnZero {
		return s.Taken
	}
	return s.Next()
}

// Guarded is what the straight-line code from a site's fire target does first.
type Guarded struct {
	Call   uint64 // target of the first direct call not passed over
	CallPC uint64 // address of that call
	Return uint64 // the pc after it: the call's return address
	// Receivers holds the addresses the code may have put in the call's receiver
	// register: every RIP-relative LEA on the way (amd64), or X0 when known (arm64).
	Receivers []uint64
}

// Walked is a function walked from its entry: its extent, where its instructions start
// and where its direct branches go.
type Walked struct {
	Entry, End uint64
	Targets    []uint64 // direct branch targets in the function (and arm64's ADR labels): sorted, no duplicates
	Starts     []uint64 // bit i set: an instruction starts at Entry+i; nil where Width says
	Width      int      // the fixed instruction width (arm64: 4), 0 for variable-length code
	Insts      int      // instructions walked, where counted
	// SPDelta, where the caller has the function's pc tables, is how far SP is below
	// the entry's at pc (a frame's pushes and its SUB), or -1 if they do not say; nil
	// without them (readers then take SP for the entry's wherever it is not moved).
	SPDelta func(pc uint64) int32
}

// SortTargets sorts a walk's branch targets and drops the duplicates, as
// Walked.Targets keeps them. By sort.Slice, whose code every program that imports sdt
// links already (the registry, sled and patch sort with it), where slices.Sort would
// add a whole instantiation of pdqsort for uint64.
func SortTargets(targets []uint64) []uint64 {
	sort.Slice(targets, func(i, j int) bool { return targets[i] < targets[j] })
	return slices.Compact(targets)
}

// IsStart reports whether an instruction of the walked function starts at pc.
func (w *Walked) IsStart(pc uint64) bool {
	if pc < w.Entry || pc >= w.End {
		return false
	}
	o := pc - w.Entry
	if w.Width > 0 {
		return o%uint64(w.Width) == 0
	}
	return w.Starts[o/64]&(1<<(o%64)) != 0
}

// Target returns the first branch target t of the function with lo <= t < hi.
func (w *Walked) Target(lo, hi uint64) (uint64, bool) {
	i, j := 0, len(w.Targets)
	for i < j {
		h := int(uint(i+j) >> 1)
		if w.Targets[h] < lo {
			i = h + 1
		} else {
			j = h
		}
	}
	if i < len(w.Targets) && w.Targets[i] < hi {
		return w.Targets[i], true
	}
	return 0, false
}

// Sled is a site's canonical replacement: two forms of the site's length that differ
// only in their toggle, the one instruction a run-time switch writes.
type Sled struct {
	Off, On []byte // disabled form, enabled form
	At      int    // offset of the toggle (amd64: after a NOP that aligns it)
	Toggle  int    // length of the toggle: Off and On differ only in [At, At+Toggle)
	Target  uint64 // where the jump form goes

	// Also lists rewrites outside the site made once, when it is sealed, and never
	// toggled (arm64: the flag load, once its register is proven dead).
	Also []Patch
	// Note says what stays as the compiler wrote it and why (arm64: the flag load).
	Note string
}

// Patch is a rewrite of the bytes at Addr into New.
type Patch struct {
	Addr uint64
	New  []byte
}

// CallEffect says what a call does to a register that holds a probe's flag byte.
type CallEffect int

const (
	// CallKeeps: the callee may preserve the register (runtime assembly helpers such
	// as the write barrier do); the walk goes on after the call.
	CallKeeps CallEffect = iota
	// CallKills: an ordinary Go (ABIInternal) function, after which no allocatable
	// register holds anything of the caller's: the register is dead.
	CallKills
	// CallNoReturn: the callee never returns (panics); the path ends.
	CallNoReturn
)

// Call is a direct call found by Offline.Calls.
type Call struct {
	PC, Target uint64
	// Args holds the values the code put in the argument registers (Offline.ArgRegs
	// order) as far as they are constants: addresses and immediates; Known bit i says
	// Args[i] is one.
	Args  []uint64
	Known uint64
	// Stored is the address the code right after the call stores the result's low
	// byte to (a probe definition's flag), 0 if it does not.
	Stored uint64
}

// Arg returns argument register i's value and whether the code made it a constant.
func (c Call) Arg(i int) (uint64, bool) {
	if i < 0 || i >= len(c.Args) || c.Known&(1<<i) == 0 {
		return 0, false
	}
	return c.Args[i], true
}
