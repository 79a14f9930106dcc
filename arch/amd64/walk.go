package amd64

import "github.com/gosdt/gosdt/arch"

// walkChunk is how much code walk reads at a time.
const walkChunk = 4096

// walker is walk's memory, reused from one function to the next (a cache holds one, and
// a walk through the cache returns its w): a walk allocates nothing then.
type walker struct {
	w              arch.Walked
	starts         []uint64 // bit i: an instruction starts at entry+i
	targets, calls []uint64
}

// walk walks the Go function [entry, end) linearly (Arch.Walk), padding included,
// without decoding operands: quickLength (or decodeInst) says how long each
// instruction is and where a branch goes. An instruction the decoder does not know is
// an error naming the pc.
func walk(m arch.Memory, entry, end uint64) (*arch.Walked, error) {
	if end <= entry {
		return nil, shapeErr(entry, "function ends at %#x, before it starts", end)
	}
	wr := new(walker)
	if c, ok := m.(*cache); ok {
		wr = &c.walker
	}
	w := &wr.w
	*w = arch.Walked{Entry: entry}
	starts, targets, calls := wr.starts[:0], wr.targets[:0], wr.calls[:0]
	insts := 0
	defer func() { wr.starts, wr.targets, wr.calls = starts, targets, calls }()
	var chunk []byte
	chunkPC, chunkShort := entry, false
	pc := entry
	for pc < end {
		off := int(pc - chunkPC)
		if chunk == nil || off >= len(chunk) || len(chunk)-off < maxInstLen && !chunkShort {
			chunk, chunkPC, off = m.Read(pc, walkChunk), pc, 0
			chunkShort = len(chunk) < walkChunk
		}
		b := chunk[off:]
		if len(b) == 0 {
			break
		}
		n, flow, rel, ok := 0, flowNext, int32(0), false
		if len(b) >= maxInstLen {
			n, flow, rel, ok = quickLength(b)
		}
		if !ok {
			var in inst
			if !decodeInst(b, &in) {
				return w, shapeErr(pc, "cannot decode % x: not an instruction the decoder knows", b[:min(len(b), 8)])
			}
			n, flow, rel = int(in.n), in.flow, in.rel
		}
		var target uint64
		if flow == flowJcc || flow == flowJmp || flow == flowCall {
			target = pc + uint64(n) + uint64(int64(rel))
		}
		o := pc - entry
		for int(o/64) >= len(starts) {
			starts = append(starts, 0)
		}
		starts[o/64] |= 1 << (o % 64)
		insts++
		switch flow {
		case flowJcc, flowJmp:
			if target != 0 {
				targets = append(targets, target)
			}
		case flowCall:
			calls = append(calls, target)
		}
		pc += uint64(n)
	}
	if insts == 0 {
		return w, shapeErr(entry, "no code mapped")
	}
	w.End, w.Insts = pc, insts
	for uint64(len(starts)) < (pc-entry+63)/64 { // IsStart reads up to End
		starts = append(starts, 0)
	}
	w.Starts = starts
	for _, t := range calls {
		if t >= w.Entry && t < w.End {
			targets = append(targets, t)
		}
	}
	w.Targets = arch.SortTargets(targets)
	return w, nil
}
