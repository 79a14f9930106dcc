package pred

import (
	"github.com/gosdt/gosdt/sdt/internal/fprobe"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// Direct is the program as a run-time return probe's return path runs it
// (fprobe.Pred): the same instructions, so that a trace's returns written there
// are filtered as Match filters those the drain delivers; nil for a nil Program.
// Made once per trace and probe, when the trace is armed.
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

// The opcodes, outcomes and kinds are fprobe's (a negative constant does not compile).
const (
	_ = uint(opConst-fprobe.PredConst) + uint(fprobe.PredConst-opConst) +
		uint(opBool-fprobe.PredBool) + uint(fprobe.PredBool-opBool) +
		uint(opInt-fprobe.PredInt) + uint(fprobe.PredInt-opInt) +
		uint(opUint-fprobe.PredUint) + uint(fprobe.PredUint-opUint) +
		uint(opStrEq-fprobe.PredStrEq) + uint(fprobe.PredStrEq-opStrEq) +
		uint(opStr-fprobe.PredStr) + uint(fprobe.PredStr-opStr) +
		uint(opArgs-fprobe.PredArgs) + uint(fprobe.PredArgs-opArgs) +
		uint(opAny-fprobe.PredAny) + uint(fprobe.PredAny-opAny)
	_ = uint(lt-fprobe.PredLt) + uint(fprobe.PredLt-lt) + uint(eq-fprobe.PredEq) + uint(fprobe.PredEq-eq) +
		uint(gt-fprobe.PredGt) + uint(fprobe.PredGt-gt) +
		uint(unordered-fprobe.PredUnordered) + uint(fprobe.PredUnordered-unordered)
	_ = uint(registry.Int-fprobe.DirectInt) + uint(fprobe.DirectInt-registry.Int) +
		uint(registry.Uint-fprobe.DirectUint) + uint(fprobe.DirectUint-registry.Uint) +
		uint(registry.Bool-fprobe.DirectBool) + uint(fprobe.DirectBool-registry.Bool) +
		uint(registry.Float-fprobe.DirectFloat) + uint(fprobe.DirectFloat-registry.Float) +
		uint(registry.String-fprobe.DirectString) + uint(fprobe.DirectString-registry.String)
)
