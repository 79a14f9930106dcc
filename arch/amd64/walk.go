package amd64

import (
	"slices"

	"golang.org/x/arch/x86/x86asm"
)

// Walked is a function walked from its entry with the length decoder: where each of
// its instructions starts and where its direct branches go. It is what proving a site
// needs of the rest of its function; the site's own instructions are decoded in full
// by x86asm when it is matched (Match).
type Walked struct {
	Entry, End uint64   // the instructions' extent
	starts     []uint64 // bit i set: an instruction starts at Entry+i
	Targets    []uint64 // direct branch targets, as BranchTargets: sorted, no duplicates
	Insts      int      // instructions walked
	Slow       int      // of which the length table did not know (decoded by x86asm)
}

// walkChunk is how much code WalkFunc reads at a time.
const walkChunk = 4096

// WalkFunc walks a Go function linearly from entry, with the same rule as DecodeFunc
// for where it ends (end == 0) and the same instruction boundaries, without decoding
// operands: Length says how long each instruction is, and x86asm is asked only for
// those Length does not know. Undecodable bytes are an error naming the pc.
func WalkFunc(m Memory, entry uint64, inFunc func(pc uint64) bool) (*Walked, error) {
	return new(Walker).Walk(m, entry, inFunc)
}

// A Walker walks functions (WalkFunc) reusing its scratch memory, so that a walk
// allocates only its result. It is not safe for concurrent use.
type Walker struct {
	starts         []uint32
	targets, calls []uint64
}

// Walk is WalkFunc.
func (wr *Walker) Walk(m Memory, entry uint64, inFunc func(pc uint64) bool) (*Walked, error) {
	w := &Walked{Entry: entry}
	starts, targets, calls := wr.starts[:0], wr.targets[:0], wr.calls[:0]
	defer func() { wr.starts, wr.targets, wr.calls = starts, targets, calls }()
	var maxTarget uint64
	var chunk []byte
	chunkPC, chunkShort := entry, false
	prevUncond := false
	pc := entry
	for {
		off := int(pc - chunkPC)
		if chunk == nil || off >= len(chunk) || len(chunk)-off < MaxInstLen && !chunkShort {
			chunk, chunkPC, off = m.Read(pc, walkChunk), pc, 0
			chunkShort = len(chunk) < walkChunk
		}
		b := chunk[off:]
		if len(b) == 0 {
			break
		}
		if b[0] == 0xCC && prevUncond && pc > maxTarget {
			break // INT3 padding between functions
		}
		n, flow, rel, ok := Length(b)
		var target uint64
		if ok {
			if flow == FlowJcc || flow == FlowJmp || flow == FlowCall {
				target = pc + uint64(n) + uint64(int64(rel))
			}
		} else {
			in, err := decodeBytes(b[:min(len(b), MaxInstLen)], pc)
			if err != nil {
				return w, err
			}
			w.Slow++
			n, flow, target = in.Len, FlowOf(in), in.Target
		}
		starts = append(starts, uint32(pc-entry))
		switch flow {
		case FlowJcc, FlowJmp:
			if target != 0 {
				targets = append(targets, target)
				maxTarget = max(maxTarget, target)
			}
		case FlowCall:
			calls = append(calls, target)
		}
		pc += uint64(n)
		prevUncond = flow.Uncond()
		if prevUncond {
			if inFunc != nil {
				if !inFunc(pc) {
					break
				}
			} else if pc > maxTarget && flow != FlowJmpInd {
				break
			}
		}
	}
	if len(starts) == 0 {
		return w, shapeErr(entry, "no code mapped")
	}
	w.End, w.Insts = pc, len(starts)
	w.starts = make([]uint64, (pc-entry+63)/64)
	for _, o := range starts {
		w.starts[o/64] |= 1 << (o % 64)
	}
	for _, t := range calls {
		if t >= w.Entry && t < w.End {
			targets = append(targets, t)
		}
	}
	slices.Sort(targets)
	targets = slices.Compact(targets)
	w.Targets = slices.Clone(targets)
	return w, nil
}

// FlowOf classifies an instruction decoded by x86asm as Length would.
func FlowOf(in Inst) Flow {
	switch {
	case in.Op == x86asm.CALL:
		if in.Target != 0 {
			return FlowCall
		}
		return FlowCallInd
	case in.Op == x86asm.JMP:
		if in.Target != 0 {
			return FlowJmp
		}
		return FlowJmpInd
	case isCondJump(in.Op):
		return FlowJcc
	case in.Op == x86asm.RET:
		return FlowRet
	case isUncond(in):
		return FlowTrap
	}
	return FlowNext
}

// maxSiteLen bounds a site: the CMPB, padding NOPs and the Jcc.
const maxSiteLen = 64

// Match matches the site shape (MatchSite) at addr, which must be an instruction start
// of the walked function. The site's instructions (the CMPB, the NOPs, the Jcc) are
// decoded by x86asm and must fall on the walk's boundaries; the branch targets are the
// whole function's.
func (w *Walked) Match(m Memory, addr uint64) (Site, error) {
	if !w.IsStart(addr) {
		return Site{}, shapeErr(addr, "not on an instruction boundary")
	}
	var insts []Inst
	for pc := addr; pc < w.End && pc < addr+maxSiteLen; {
		if !w.IsStart(pc) {
			return Site{}, shapeErr(pc, "x86asm and the walk disagree on the instruction boundary at %#x", pc)
		}
		in, err := Decode(m, pc)
		if err != nil {
			return Site{}, err
		}
		insts = append(insts, in)
		if len(insts) > 1 && in.Op != x86asm.NOP {
			break
		}
		pc = in.End()
	}
	near := map[uint64]bool{}
	i, _ := slices.BinarySearch(w.Targets, addr)
	for ; i < len(w.Targets) && w.Targets[i] < addr+maxSiteLen; i++ {
		near[w.Targets[i]] = true
	}
	return MatchSite(insts, 0, near)
}

// IsStart reports whether an instruction of the walked function starts at pc.
func (w *Walked) IsStart(pc uint64) bool {
	if pc < w.Entry || pc >= w.End {
		return false
	}
	o := pc - w.Entry
	return w.starts[o/64]&(1<<(o%64)) != 0
}
