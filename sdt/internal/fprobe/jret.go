package fprobe

import (
	"bytes"
	"errors"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/patch"
)

// Returns by a jump: a function whose frame is gone at its RET (a leaf; or one whose
// epilogue the return stub refuses, which with gc's layout never qualifies on amd64,
// where the morestack block follows every RET of a function with a stack check) takes
// its return probe as a jump written over each RET: over the RET and the linker's
// padding after it, or a punned one over the RET's byte alone where code follows it
// (amd64), or over the RET (arm64); to a return slot of jretSlots
// (leaf_$GOARCH.s) that loads the slot's index and jumps to jretStub, which calls
// retHandler as the return stub does. DESIGN.md, "Returns by a jump", has the argument.

// jretSlotCount is how many functions may have their returns probed by a jump at once
// (of MaxFuncs): each slot is text every traced program carries.
const jretSlotCount = 128

var (
	// jretCfgs[i] is the return config (its fn) of the function whose returns jump to
	// slot i; read by jretBody. Set before the jumps are written, cleared after they
	// are gone.
	jretCfgs [jretSlotCount]*config
	// jretSkipped[i] counts the returns through slot i not delivered: no stack room for
	// the handler (counted by the stub).
	jretSkipped [jretSlotCount]uint64

	// Under mu.
	jretUsed     [jretSlotCount]bool
	jretSkipBase [jretSlotCount]uint64 // jretSkipped[i] when slot i was given its function
)

// jretInfo is what a Func whose returns are jumps holds beyond a Func's (its sites are
// retSites, its return config rets[0]).
type jretInfo struct {
	// puns[k], when not 0, is where the punned jump over return k goes (its
	// trampoline; arch.FuncReturn.Pun). Immutable.
	puns []uintptr
	// Under mu.
	slot  int       // the return slot its jumps go to; -1 while none is written
	skips uint64    // the skips counted in its past slots
	taken []uintptr // the trampolines its punned returns hold (trampTake)
}

// readJumpRets reads function i's returns (walked in w) for jumps to a return slot, or
// says why they take none; puns[k] is where return k's punned jump goes (0: not
// punned), away from the program's image (lo to hi).
func readJumpRets(t *functab.Table, i int, w *arch.Walked, mem arch.Memory, lo, hi uintptr) (rets []arch.FuncReturn, puns []uintptr, err error) {
	if host.RetJump == nil || jretSlotLen == 0 {
		return nil, nil, errors.New("no return slots on this architecture")
	}
	// The function's code ends where its pc tables do; the linker's padding follows.
	var code uint32
	if err := t.SPDeltas(i, func(lo, hi uint32, v int32) bool { code = max(code, hi); return true }); err != nil {
		return nil, nil, err
	}
	rets, err = host.RetJump(mem, w, t.Entry(i)+uint64(code))
	if err != nil {
		return nil, nil, err
	}
	puns = make([]uintptr, len(rets))
	for k, r := range rets {
		// The jump goes where the frame is gone: the pcsp table says so at the RET.
		if d := t.SPDelta(i, r.Ret); d != 0 {
			return nil, nil, errors.New("the frame at the return " + hex(r.Ret) + " is " + itoa(int(d)) + " bytes, not gone")
		}
		rets[k].Orig = append([]byte(nil), r.Orig...)
		if r.Pun {
			if puns[k], err = punJump(r.Addr, mem, lo, hi); err != nil {
				return nil, nil, errors.New("the return at " + hex(r.Addr) + " has no room after it for a jump, and " + err.Error())
			}
		}
	}
	return rets, puns, nil
}

// setJumpRets makes rets f's returns, each a jump to a return slot.
func (f *Func) setJumpRets(rets []arch.FuncReturn, puns []uintptr) {
	f.retSites = rets
	f.rets = []*config{{ret: uintptr(rets[0].Ret), fn: f}}
	f.jret = &jretInfo{slot: -1, puns: puns}
	f.retErr = nil
}

// jretWrites returns the writes that switch f's returns by jump on or off, with what
// Set does after its patch (leafDone). mu held.
func jretWrites(f *Func, on bool) ([]patch.Write, error) {
	j := f.jret
	if !on {
		i := j.slot
		if i < 0 {
			return nil, nil
		}
		var ws []patch.Write
		for _, r := range f.retSites {
			ws = append(ws, patch.Write{Addr: uintptr(r.Addr), Old: jretText(f, r), New: r.Orig})
		}
		leafDone = append(leafDone, func(ok bool) {
			if ok {
				atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&jretCfgs[i])), nil)
				jretUsed[i] = false
				j.slot = -1
				// No thread is in the slot after the patch's rendezvous: the count is final.
				j.skips += atomic.LoadUint64(&jretSkipped[i]) - jretSkipBase[i]
				j.dropTramps() // nor in a trampoline
			}
		})
		return ws, nil
	}
	i := slices.Index(jretUsed[:], false)
	if i < 0 {
		return nil, errors.New("fprobe: " + f.Name + ": at most " + itoa(jretSlotCount) + " functions may have their returns probed by a jump (a leaf's, or a frame of only the saved BP) at once")
	}
	slot := jretSlotAddr(i)
	code := jretSlotCode(i, slot)
	if code == nil {
		return nil, errors.New("fprobe: " + f.Name + ": the return slots are out of a jump's reach")
	}
	var ws []patch.Write
	// The slot's old bytes: what the text holds (no jump goes there: it is free). A
	// slot's code names only its index, so a reused one may already hold it.
	old := make([]byte, jretSlotLen)
	for k := range old {
		old[k] = *(*byte)(rawptr.At(slot + uintptr(k)))
	}
	if !bytes.Equal(old, code) {
		ws = append(ws, patch.Write{Addr: slot, Old: old, New: code})
	}
	for k, r := range f.retSites {
		if t := j.puns[k]; t != 0 {
			tw, err := trampTake(t, slot)
			if err != nil {
				j.dropTramps()
				return nil, errors.New("fprobe: " + f.Name + ": return at " + hex(r.Addr) + ": " + err.Error())
			}
			j.taken = append(j.taken, t)
			ws = append(ws, tw, patch.Write{Addr: uintptr(r.Addr), Old: r.Orig, New: []byte{punOpcode}})
			continue
		}
		jmp := jretJump(uintptr(r.Addr), slot, len(r.Orig))
		if jmp == nil {
			j.dropTramps()
			return nil, errors.New("fprobe: " + f.Name + ": return at " + hex(r.Addr) + ": the return slots are out of a jump's reach")
		}
		ws = append(ws, patch.Write{Addr: uintptr(r.Addr), Old: r.Orig, New: jmp})
	}
	jretUsed[i] = true
	jretSkipBase[i] = atomic.LoadUint64(&jretSkipped[i]) // no thread is in a free slot
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&jretCfgs[i])), unsafe.Pointer(f.rets[0]))
	leafDone = append(leafDone, func(ok bool) {
		if ok {
			j.slot = i
		} else {
			jretUsed[i] = false
			atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&jretCfgs[i])), nil)
			j.dropTramps()
		}
	})
	return ws, nil
}

// dropTramps gives back the trampolines of j's punned returns. mu held.
func (j *jretInfo) dropTramps() {
	for _, t := range j.taken {
		trampDrop(t)
	}
	j.taken = j.taken[:0]
}

// jretText is what f's return r is to hold with its returns on (the jump to its slot),
// nil when no slot is written. mu held.
func jretText(f *Func, r arch.FuncReturn) []byte {
	if f.jret.slot < 0 {
		return nil
	}
	if r.Pun {
		return []byte{punOpcode}
	}
	return jretJump(uintptr(r.Addr), jretSlotAddr(f.jret.slot), len(r.Orig))
}
