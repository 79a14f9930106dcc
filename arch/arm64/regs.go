package arm64

import (
	"slices"

	"github.com/gosdt/gosdt/arch"
)

// Registers are tracked by number: W3 and X3 are the same register (a write to W3
// zero-extends into X3). Number 31 is SP or ZR depending on the instruction and is
// never tracked.

// regEffect reports whether in may read register r, whether it certainly writes it,
// and whether the decoder knows in at all. Every register an instruction reads or
// writes is in its sets, the implicit ones too (BL's and BLR's link register, the
// pointer-authentication hints' X30, X16 and X17, SVC's arguments).
func regEffect(in inst, r int) (reads, writes, known bool) {
	if !in.Known() || r < 0 || r > 30 {
		return false, false, in.Known()
	}
	return in.Reads&(1<<r) != 0, in.Writes&(1<<r) != 0, true
}

// Limits of the walk in regDead.
const (
	deadMaxInsts = 96
	maxJumps     = 4
)

// regDead proves that register r holds nothing anyone reads at pc: on every path from
// pc, r is written before it is read, or the path reaches a RET, or a BL that call says
// kills or never returns. Both sides of conditional branches are followed (backward
// ones too: a path that meets a pc already walked is covered by that walk), up to 96
// instructions in all. A read of r, an indirect branch, a trap, a word the decoder
// does not know or running out of budget means "not proven": the error says why.
//
// RET and a killing BL count as no use of r: the caller tracks a value that Go code
// never passes as an argument or returns (a probe's flag byte, which package sdt only
// compares with zero), so r can only be an argument or result register there by chance.
func regDead(m arch.Memory, pc uint64, r int, call func(target uint64) arch.CallEffect) error {
	start := pc
	var local []uint64
	seen := &local // pcs walked: at most the budget; a cache's memory, reused
	if c, ok := m.(*cache); ok {
		seen, c.seen = &c.seen, c.seen[:0]
	}
	var workBuf [8]uint64 // the other sides of branches still to walk
	work := append(workBuf[:0], pc)
	budget := deadMaxInsts
	for len(work) > 0 {
		pc := work[len(work)-1]
		work = work[:len(work)-1]
		for jumps := 0; ; {
			if slices.Contains(*seen, pc) {
				break
			}
			if budget--; budget < 0 {
				return shapeErr(start, "R%d not proven dead within %d instructions", r, deadMaxInsts)
			}
			*seen = append(*seen, pc)
			in, err := decode(m, pc)
			if err != nil {
				return shapeErr(start, "R%d not proven dead: %v", r, err)
			}
			// The fields the walk needs, in registers; the inst is made again for a
			// message.
			w, flow, target := in.Word, in.Flow, in.Target
			switch flow {
			case flowRET:
				goto next
			case flowBL:
				switch call(target) {
				case arch.CallKills, arch.CallNoReturn:
					goto next
				}
				pc += instLen
				continue
			case flowBR, flowBLR:
				return shapeErr(pc, "R%d at %#x not proven dead: indirect branch %v", r, start, decodeWord(w, pc))
			}
			reads, writes, known := regEffect(in, r)
			switch {
			case !known:
				return shapeErr(pc, "R%d at %#x not proven dead: %v not understood", r, start, decodeWord(w, pc))
			case reads:
				return shapeErr(pc, "R%d at %#x is live: %v reads it", r, start, decodeWord(w, pc))
			case writes:
				goto next
			case flow == flowCond:
				work = append(work, target)
				pc += instLen
			case flow == flowB:
				if jumps++; jumps > maxJumps {
					return shapeErr(pc, "R%d at %#x not proven dead: more than %d jumps", r, start, maxJumps)
				}
				pc = target
			case flow == flowBR || flow == flowRET || flow == flowTrap:
				return shapeErr(pc, "R%d at %#x not proven dead: %v", r, start, decodeWord(w, pc))
			default:
				pc += instLen
			}
		}
	next:
	}
	return nil
}
