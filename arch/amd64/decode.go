package amd64

import (
	"fmt"

	"github.com/gosdt/gosdt/arch"
)

// decodeAt decodes the instruction at pc with the decoder; an instruction it does not
// know is an error naming pc and the bytes.
func decodeAt(m arch.Memory, pc uint64) (inst, error) {
	var in inst
	b := m.Read(pc, maxInstLen)
	if len(b) == 0 {
		return in, shapeErr(pc, "no code mapped")
	}
	if !decodeInst(b, &in) {
		return in, shapeErr(pc, "cannot decode % x: not an instruction the decoder knows", b[:min(len(b), 8)])
	}
	return in, nil
}

// text is the instruction at pc for messages: its mnemonic where the decoder knows
// one, and its bytes.
func (in *inst) text(m arch.Memory, pc uint64) string {
	b := m.Read(pc, int(in.n))
	if _, name, _ := flagEffect(in); name != "" {
		return fmt.Sprintf("%s (% x)", name, b)
	}
	return fmt.Sprintf("% x", b)
}
