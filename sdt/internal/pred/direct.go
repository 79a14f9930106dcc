package pred

import "github.com/gosdt/gosdt/sdt/internal/fprobe"

// Direct is the program as a run-time return probe's return path runs it
// (fprobe.Pred): the same instructions, so that a trace's returns written there
// are filtered as Match filters those the drain delivers; nil for a nil Program.
// Made once per trace and probe, when the trace is armed. The opcodes and outcomes
// are fprobe's (match.go), the kinds registry's, which are fprobe's (registry's
// direct.go checks it).
func (p *Program) Direct() *fprobe.Pred {
	if p == nil {
		return nil
	}
	code := make([]fprobe.PredIns, len(p.code))
	for i, in := range p.code {
		code[i] = fprobe.PredIns{Op: uint8(in.op), Mask: in.mask, X: in.x, Y: in.y, LK: uint8(in.lk),
			T: in.t, F: in.f, K: in.k, S: in.s}
	}
	return fprobe.NewPred(code, p.need)
}
