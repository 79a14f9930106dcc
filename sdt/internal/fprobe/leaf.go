package fprobe

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Entry probes of leaves: functions without a stack check, whose entry is a jump to a
// slot of leafSlots (leaf_$GOARCH.s) that runs their displaced first instruction out
// of line. DESIGN.md, "Leaves", has the whole argument.

// leafCtxtOff is where the leaf stub saves the closure context, after the argument
// registers (leafSpills).
const leafCtxtOff = 8 * (leafInts + leafFloats)

// leafCheck is which words of a leaf's arguments leafHandler checks for a pointer into
// the goroutine's stack: those that may be pointers the leaf reads. The integer
// argument registers (no more than the arguments' scalar components: argComponents)
// and the closure context that the leaf's code may read before it writes them
// (arch.LeafEntry.LiveIn; where the decoder does not say, amd64, all those and the
// context: a dead one that happens to hold a stack address then skips the hook for
// nothing, counted), and the words of
// its argument area (stack arguments, then the register arguments' spill slots) that
// its arguments' stack map marks pointers and its code may read (a spill slot, which
// a frameless leaf never reads, holds what the caller last left there).
type leafCheck struct {
	area uintptr // the argument area's size in bytes (for CheckLayout, not the handler)
	// The displaced instruction's pc-relative operand (arch.LeafEntry.Rel, Target),
	// which leafSlotCode re-encodes: not the handler's either.
	rel    int
	target uint64
	regs   uint64  // bit r: the integer argument register saved at argp+8r
	ctxt   uintptr // 1: the closure context register too
	mask   uint64  // bit j: word j of the argument area
}

// leafCheckFor makes leaf i's leafCheck, from its argument area's size (args) and its
// arguments' stack map 0; an area without a map is checked whole.
func leafCheckFor(t *functab.Table, i int, args int32) leafCheck {
	words := (int(args) + 7) / 8 // at most 64: leafRefused
	// No more integer registers than the arguments have scalar components (the
	// traceback's argument info lists them, strings and slices word by word), or,
	// where it is cut short, than their spill slots have bytes.
	n := int(args)
	if k, ok := argComponents(t, i); ok {
		n = k
	}
	c := leafCheck{area: uintptr(args), regs: uint64(1)<<min(n, leafInts) - 1, ctxt: 1}
	all := uint64(1)<<words - 1
	c.mask = all
	if off, ok := t.FuncData(i, functab.FuncDataArgsPointerMaps); ok {
		if g := t.Gofunc()[off:]; len(g) >= 8 {
			n, nbit := int32(binary.LittleEndian.Uint32(g)), int32(binary.LittleEndian.Uint32(g[4:]))
			if n >= 1 && nbit >= 0 && int(nbit) <= words && int(8+(nbit+7)/8) <= len(g) {
				c.mask = 0
				for w := int32(0); w < nbit; w++ {
					if g[8+w/8]&(1<<(w%8)) != 0 {
						c.mask |= 1 << w
					}
				}
				c.mask |= all &^ (uint64(1)<<nbit - 1) // words the map does not cover
			}
		}
	}
	return c
}

// argComponents counts the scalar components of function i's arguments in its
// FUNCDATA_ArgInfo (runtime/traceback.go printArgs: offset and size pairs, 0xfe and
// 0xfd around aggregates, 0xfb a component whose offset does not fit, 0xfc the rest
// left out, 0xff the end), and a generic function's dictionary, which the compiler
// leaves out of it (cmd/compile/internal/ssagen EmitArgInfo); false when it has none,
// or leaves some out.
func argComponents(t *functab.Table, i int) (int, bool) {
	off, ok := t.FuncData(i, functab.FuncDataArgInfo)
	if !ok {
		return 0, false
	}
	g := t.Gofunc()[off:]
	n := 0
	if strings.Contains(string(t.Name(i)), "[") {
		n++
	}
	for j := 0; j < len(g); {
		switch g[j] {
		case 0xff:
			return n, true
		case 0xfe, 0xfd:
			j++
		case 0xfb:
			n++
			j++
		case 0xfc:
			return 0, false
		default:
			n++
			j += 2
		}
	}
	return 0, false
}

// leafSlotCount is how many leaves may have their entry probed at once (of MaxFuncs
// functions): each slot is text every traced program carries.
const leafSlotCount = 128

var (
	// leafCfgs[i] is the config of the leaf slot i jumps from; read by leafHandler.
	// Set before the jump is written, cleared after it is gone.
	leafCfgs [leafSlotCount]*config
	// leafSkipped[i] counts the entries through slot i that were not delivered: no
	// stack room for the handler (counted by the stub), or an argument pointing into
	// the goroutine's stack (see leafHandler). Atomic: off the common path.
	leafSkipped [leafSlotCount]uint64

	// leafChecks[i] is the leafCheck of the leaf slot i jumps from, set with
	// leafCfgs[i].
	leafChecks [leafSlotCount]leafCheck

	// Under mu.
	leafUsed     [leafSlotCount]bool
	leafSkipBase [leafSlotCount]uint64 // leafSkipped[i] when slot i was given its leaf
	leafDone     []func(ok bool)       // what Set does once its patch is applied (ok) or not
)

// leafInfo is what a leaf's Func holds beyond a Func's.
type leafInfo struct {
	check leafCheck // immutable
	// pun, when not 0, is where the jump goes that is its entry's first byte, E9
	// over a shorter instruction, with the 4 bytes after it as its displacement
	// (arch.LeafEntry.Pun): its trampoline, a JMP to the slot. Immutable.
	pun uintptr
	// Under mu.
	slot  int    // the slot its jump goes to; -1 while none is written
	skips uint64 // the skips counted in its past slots
}

// punTarget is where the punned jump of leaf entry e goes (its trampoline), 0 if e is
// not punned; an error if no page there can be free: outside the address space, or
// in the program's image (from lo to hi) or within punMargin of it.
func punTarget(e arch.LeafEntry, mem arch.Memory, lo, hi uintptr) (uintptr, error) {
	if !e.Pun {
		return 0, nil
	}
	t, err := punJump(e.Addr, mem, lo, hi)
	if err != nil {
		return 0, errors.New("its first instruction is shorter than a jump, and " + err.Error())
	}
	return t, nil
}

// punJump is where a punned jump at addr goes: addr + 5 + the 4 bytes after addr;
// an error if no page there can be free (punTarget).
func punJump(addr uint64, mem arch.Memory, lo, hi uintptr) (uintptr, error) {
	d := mem.Read(addr+1, 4)
	if len(d) != 4 || punOpcode == 0 {
		return 0, errors.New("no jump can be punned here")
	}
	pun := uintptr(int64(addr) + 5 + int64(int32(binary.LittleEndian.Uint32(d))))
	if pun < 1<<16 || uint64(pun) > 1<<47-1<<13 {
		return 0, errors.New("a jump punned there, whose displacement would be the 4 bytes after its opcode, would go to " + hex(uint64(pun)) + ", outside the address space")
	}
	// Not into the program's image, where no page is free: its text, data and bss,
	// and after them a margin for the bss without pointers, whose end the module
	// data does not give.
	if pun+5 > lo-min(lo, punMargin) && pun < hi+punMargin {
		return 0, errors.New("a jump punned there, whose displacement would be the 4 bytes after its opcode, would go to " + hex(uint64(pun)) + ", into the program's image or within " + itoa(punMargin>>20) + " MiB of it, where its trampoline's page would not be free")
	}
	return pun, nil
}

// punnedRets says why a leaf whose entry's jump is punned to pun (0: not punned)
// cannot take its returns by the jumps rets, nil if it can: a return's jump would
// write the bytes the entry's jump reads as its displacement.
func punnedRets(pun uintptr, e arch.LeafEntry, rets []arch.FuncReturn) error {
	for _, r := range rets {
		if pun != 0 && r.Addr < e.Addr+5 {
			return errors.New("its jump would write the bytes that the entry's punned jump reads as its displacement")
		}
	}
	return nil
}

// imageOf is where module m's text, data and bss are, for punTarget.
func imageOf(m *functab.Module) (lo, hi uintptr) { return m.Text, max(m.Etext, m.Edata, m.Ebss) }

// punMargin is how far from the program's image a punned jump's trampoline must be.
const punMargin = 4 << 20

// leafEntryText is what leaf f's entry holds while its jump to slot is in.
func leafEntryText(f *Func, slot uintptr) []byte {
	if f.leaf.pun != 0 {
		return append([]byte{punOpcode}, f.orig[1:]...)
	}
	return leafJump(f.site, slot, len(f.orig))
}

// isLeaf reports whether f's entry is a leaf's (a jump to a slot).
func isLeaf(f *Func) bool { return f.leaf != nil }

// Leaf reports whether f is a leaf, whose entry probe is a jump to a slot: its hook
// must be pinned (Change.Pinned), its return probe is a jump too where its code
// allows (ReturnErr says why not), and its Args are the ABI's argument registers
// whatever the function uses (Words), no word a live pointer.
func (f *Func) Leaf() bool { return isLeaf(f) }

// Skipped is how many of a leaf's entries were seen and not delivered nor counted in
// Stats.Entries (no stack room for the handler, or an argument word pointing into the
// goroutine's own stack, which a stack move during the hook would leave stale), and
// how many returns by a jump were seen and not counted in Stats.Returns (no stack
// room for the handler).
func (f *Func) Skipped() int64 {
	mu.Lock()
	defer mu.Unlock()
	var n uint64
	if f.leaf != nil {
		n += f.leaf.skips
		if i := f.leaf.slot; i >= 0 {
			n += atomic.LoadUint64(&leafSkipped[i]) - leafSkipBase[i]
		}
	}
	if f.jret != nil {
		n += f.jret.skips
		if i := f.jret.slot; i >= 0 {
			n += atomic.LoadUint64(&jretSkipped[i]) - jretSkipBase[i]
		}
	}
	return int64(n)
}

// readLeaf makes the Func of leaf i of t (of module m), walked in w, whose entry a
// slot can take, or says why not (an error to append to the entry's refusal).
func readLeaf(t *functab.Table, i int, w *arch.Walked, mem arch.Memory, m *functab.Module) (*Func, error) {
	name := string(t.Name(i))
	fn, ok := t.Func(i)
	if !ok {
		return nil, errors.New("no function record")
	}
	if err := leafRefused(name, fn); err != nil {
		return nil, err
	}
	if err := goCompiled(t, i); err != nil {
		return nil, err
	}
	w.SPDelta = func(pc uint64) int32 { return t.SPDelta(i, pc) }
	e, err := host.LeafEntry(mem, w)
	w.SPDelta = nil
	if err != nil {
		return nil, err
	}
	chk := leafCheckFor(t, i, fn.Args)
	if err := beforeArgs(e, chk); err != nil {
		return nil, err
	}
	chk.mask &= e.ArgReads // a word the leaf never reads may go stale
	if e.LiveInKnown {
		chk.regs &= uint64(e.LiveIn) & (1<<leafInts - 1) // arm64: slot r is Rr
		chk.ctxt = uintptr(e.LiveIn >> leafCtxtReg & 1)
	}
	// What the loads that ran in place wrote is live at the slot, and may point into
	// the goroutine's stack as an argument may.
	chk.regs |= beforeRegs(e.Before)
	chk.ctxt |= uintptr(e.Before >> leafCtxtReg & 1)
	chk.rel, chk.target = e.Rel, e.Target
	lo, hi := imageOf(m)
	pun, err := punTarget(e, mem, lo, hi)
	if err != nil {
		return nil, err
	}
	f := &Func{Name: name, Entry: uintptr(t.Entry(i)), site: uintptr(e.Addr), orig: append([]byte(nil), e.Orig...)}
	f.entry = &config{resume: uintptr(e.Resume), fn: f}
	f.spills = leafSpills()
	f.leaf = &leafInfo{check: chk, slot: -1, pun: pun}
	rets, puns, err := readJumpRets(t, i, w, mem, lo, hi)
	if err == nil {
		err = punnedRets(pun, e, rets)
	}
	if err == nil {
		f.setJumpRets(rets, puns)
	} else {
		f.retErr = errors.New("fprobe: " + name + ": return: a leaf, whose return takes only a jump (DESIGN.md, \"Returns by a jump\"): " + err.Error())
	}
	return f, nil
}

// beforeArgs says why the loads that run in place before leaf e's probe
// (arch.LeafEntry.Before) leave it no arguments to read, nil if they do not: one
// writes a register that may hold an argument (chk.regs, before LiveIn narrows it).
func beforeArgs(e arch.LeafEntry, chk leafCheck) error {
	if arg := beforeRegs(e.Before) & chk.regs; arg != 0 {
		return errors.New("its first instructions may fault, so run in place, and one loads into " + leafRegName(bits.TrailingZeros64(arg)) + ", an argument register: a probe after it would not see the argument")
	}
	return nil
}

// leafRefused says why leaf fn (named name) takes no slot before its code is read, nil
// if it may.
func leafRefused(name string, fn functab.Func) error {
	switch {
	case leafSlotLen == 0:
		return errors.New("no leaf slots on this architecture")
	case fn.Flag&functab.FlagAsm != 0:
		return errors.New("assembly: its registers at entry follow no ABI")
	case strings.HasSuffix(name, ".abi0"):
		return errors.New("an ABI0 wrapper: g is not in its register at entry")
	case fn.Args < 0 || fn.Args > 512:
		return errors.New("an argument area of " + itoa(int(fn.Args)) + " bytes, over the 512 the stub checks")
	}
	return nil
}

// goCompiled says why function i of t was not compiled or assembled by Go's tools, nil
// if it was: it has no pc tables (no SP delta at its entry). Code linked from a C
// object (the race detector's runtime) is in the function table too, without them;
// its registers at entry follow the C ABI, where R12 (the slot's) is the caller's.
func goCompiled(t *functab.Table, i int) error {
	if t.SPDelta(i, t.Entry(i)) < 0 {
		return errors.New("no pc tables: not Go code (C linked in), its registers at entry follow no Go ABI")
	}
	return nil
}

// checkLeafLayout holds a signature's spill block (CheckLayout) against leaf f, whose
// code spills nothing: its Args are every argument register, so each word the
// signature names must be one the stub saves, and the block must end where the
// leaf's argument area does (its function record's size), or the signature is not of
// this code.
func (f *Func) checkLeafLayout(want []arch.Spill) error {
	area := f.leaf.check.area
	end := int32(0)
	for i, s := range want {
		if s.Size == 0 || s.Size > 8 || s.Off < 0 ||
			s.Reg < floatReg && int(s.Reg) >= leafInts || s.Reg >= floatReg && int(s.Reg-floatReg) >= leafFloats {
			return errors.New("fprobe: " + f.Name + ": word " + itoa(i) + " of the signature is " + spillString(s) + ", not an argument register the leaf stub saves: not this program's signature")
		}
		end = max(end, s.Off+int32(s.Size))
	}
	if len(want) > 0 && uintptr(end+7)&^7 != area {
		return errors.New("fprobe: " + f.Name + ": the signature's spill block ends at " + itoa(int(end)) + ", the leaf's argument area is " + itoa(int(area)) + " bytes: not this program's signature")
	}
	return nil
}

// leafSpills is a leaf's Args layout: every argument register of the ABI, as saved by
// the leaf stub at the offsets leafArgOff gives (integer registers, then
// floating-point ones, a word each).
func leafSpills() []arch.Spill {
	var s []arch.Spill
	for r := 0; r < leafInts; r++ {
		s = append(s, arch.Spill{Reg: uint8(r), Size: 8, Off: int32(8 * r)})
	}
	for r := 0; r < leafFloats; r++ {
		s = append(s, arch.Spill{Reg: floatReg + uint8(r), Size: 8, Off: int32(8 * (leafInts + r))})
	}
	return s
}

// leafWrites returns the writes that switch leaf f's entry on or off, with what Set
// does after its patch (leafDone). mu held.
func leafWrites(f *Func, on bool) ([]patch.Write, error) {
	if !on {
		i := f.leaf.slot
		if i < 0 {
			return nil, nil
		}
		jmp := leafEntryText(f, leafSlotAddr(i))
		leafDone = append(leafDone, func(ok bool) {
			if ok {
				atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&leafCfgs[i])), nil)
				leafUsed[i] = false
				f.leaf.slot = -1
				// No thread is in the slot after the patch's rendezvous: the count is final.
				f.leaf.skips += atomic.LoadUint64(&leafSkipped[i]) - leafSkipBase[i]
				if f.leaf.pun != 0 {
					trampDrop(f.leaf.pun) // nor in the trampoline
				}
			}
		})
		return []patch.Write{{Addr: f.site, Old: jmp, New: f.orig}}, nil
	}
	i := slices.Index(leafUsed[:], false)
	if i < 0 {
		return nil, errors.New("fprobe: at most " + itoa(leafSlotCount) + " leaves may have their entry probed at once")
	}
	slot := leafSlotAddr(i)
	chk := f.leaf.check
	code := leafSlotCode(i, slot, f, chk.rel, chk.target)
	jmp := leafEntryText(f, slot)
	if code == nil || jmp == nil {
		return nil, errors.New("fprobe: " + f.Name + ": the leaf slots are out of a jump's reach")
	}
	var ws []patch.Write
	if t := f.leaf.pun; t != 0 {
		tw, err := trampTake(t, slot)
		if err != nil {
			return nil, errors.New("fprobe: " + f.Name + ": " + err.Error())
		}
		ws = append(ws, tw)
	}
	leafUsed[i] = true
	leafSkipBase[i] = atomic.LoadUint64(&leafSkipped[i]) // no thread is in a free slot
	leafChecks[i] = chk
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&leafCfgs[i])), unsafe.Pointer(f.entry))
	leafDone = append(leafDone, func(ok bool) {
		if ok {
			f.leaf.slot = i
		} else {
			leafUsed[i] = false
			atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&leafCfgs[i])), nil)
			if f.leaf.pun != 0 {
				trampDrop(f.leaf.pun)
			}
		}
	})
	// The slot's old bytes: what the text holds (no jump goes there: it is free).
	old := make([]byte, leafSlotLen)
	for j := range old {
		old[j] = *(*byte)(rawptr.At(slot + uintptr(j)))
	}
	return append(ws, patch.Write{Addr: slot, Old: old, New: code}, patch.Write{Addr: f.site, Old: f.orig, New: jmp}), nil
}

// leafFinish runs what leafWrites left for after Set's patch. mu held.
func leafFinish(ok bool) {
	for _, d := range leafDone {
		d(ok)
	}
	leafDone = leafDone[:0]
}

// leafHandler is called by the leaf stub (leaf_$GOARCH.s) with the leaf's argument
// registers saved at argp, untyped, in the stub's frame, and the leaf's argument area
// (its stack arguments and spill slots, which no stack map of the frames on the stack
// now describes) at args: nosplit, and it pins its P before anything that may reach a
// safe point, so that until it returns no stack scan and no garbage collection cycle
// can begin (they need this goroutine suspended, or this P stopped): a heap object the
// arguments alone reach stays. A stack move may still happen in the hook (the stack
// grows); it would adjust neither the saved words nor the argument area, so the hook
// runs only when no word of either points into the goroutine's stack.
//
//go:nosplit
//go:norace
func leafHandler(i, argp, g, args uintptr) {
	if i >= leafSlotCount {
		return
	}
	c := (*config)(loadPtr((*unsafe.Pointer)(unsafe.Pointer(&leafCfgs[i]))))
	if c == nil {
		return // not reached: the jump is gone before the config
	}
	f := c.fn
	pid := rt.ProcPin()
	if load64(&f.wantRet) != 0 {
		// The entry time of a return by a jump (jret.go), keyed by the depth of the
		// leaf's argument area, as the return finds it; whether or not the hook runs.
		// No ring to make (Set made every P's) nor to wait for (no safe point here).
		// stamp's body, not a call: with -N -l its frame would take the nosplit
		// chain from leafStub past its limit on arm64.
		t, depth := ticks(), stackHi(g)-args
		if s := f.stateOf(pid); s == nil || !s.enterIn(g, depth, t) {
			if !enterP(pid, g, depth, c, t) {
				enter(g, depth, c, int64(t))
			}
		}
	}
	if load64(&f.hookOn) != 0 {
		if leafStackArg(argp, g, args, &leafChecks[i]) {
			add64(&leafSkipped[i], 1)
		} else {
			f.count(pid, cEntries)
			if load64(&f.quiet) == 0 {
				leafSlow(f, argp, g)
			}
		}
	}
	rt.ProcUnpin()
}

// leafStackArg reports whether a word that c says to check, of the registers saved at
// argp or of the argument area at args, points into the stack of goroutine g.
//
//go:nosplit
//go:norace
func leafStackArg(argp, g, args uintptr, c *leafCheck) bool {
	lo, hi := *(*uintptr)(rawptr.At(g)), stackHi(g)
	for m, o := c.mask, uintptr(0); m != 0; m, o = m>>1, o+8 {
		if w := *(*uintptr)(rawptr.At(args + o)); m&1 != 0 && w-lo < hi-lo {
			return true
		}
	}
	for m, o := c.regs, uintptr(0); m != 0; m, o = m>>1, o+8 {
		if w := *(*uintptr)(rawptr.At(argp + o)); m&1 != 0 && w-lo < hi-lo {
			return true
		}
	}
	w := *(*uintptr)(rawptr.At(argp + leafCtxtOff))
	return c.ctxt != 0 && w-lo < hi-lo
}

// leafSlow delivers a leaf's entry event to its hook, pinned (leafHandler pinned the
// P; the hook is a pinned one, Set checks). Should the hook panic, the P is unpinned
// for leafHandler, which the panic passes by.
//
//go:norace
func leafSlow(f *Func, argp, g uintptr) {
	h := f.onEntry.Load()
	if h == nil {
		return
	}
	var a Args
	f.readArgs(&a, rawptr.At(argp))
	done := false
	defer func() {
		if !done {
			rt.ProcUnpin()
		}
	}()
	callHook(f, *h, (*Args)(rt.Noescape(unsafe.Pointer(&a))), g)
	done = true
}
