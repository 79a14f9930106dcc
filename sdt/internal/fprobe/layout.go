package fprobe

import (
	"errors"
	"fmt"

	"github.com/gosdt/gosdt/arch"
)

// ErrNoSpills means the function's code keeps none of its register arguments for
// morestack (the compiler spills them only when the function uses one): its entry
// probe's Args has no words, whatever its signature says.
var ErrNoSpills = errors.New("fprobe: the function uses none of its register arguments: its entry probe has no words")

// CheckLayout compares the spill block a signature implies (read from the executable's
// DWARF by a tool: funcsig's Spills, in the order of Off) with the one the function's
// own code has: the same registers, widths and slots. A mismatch means the signature is
// not of the code that runs here (another build of the program), and Args's words
// would be read as the wrong values.
func (f *Func) CheckLayout(want []arch.Spill) error {
	if isLeaf(f) {
		return f.checkLeafLayout(want)
	}
	if len(f.spills) == 0 && len(want) > 0 {
		return fmt.Errorf("%w (%s)", ErrNoSpills, f.Name)
	}
	if len(want) != len(f.spills) {
		return fmt.Errorf("fprobe: %s: the signature passes %d words in registers, the code spills %d: not this program's signature", f.Name, len(want), len(f.spills))
	}
	for i, s := range f.spills {
		if want[i] != s {
			return fmt.Errorf("fprobe: %s: word %d of the signature is %s, the code spills %s: not this program's signature", f.Name, i, spillString(want[i]), spillString(s))
		}
	}
	return nil
}

// spillString names a spill by its register's ABI index: "int 2, 8 bytes at 16".
func spillString(s arch.Spill) string {
	class, reg := "int", int(s.Reg)
	if s.Reg >= floatReg {
		class, reg = "float", reg-floatReg
	}
	return fmt.Sprintf("%s register %d, %d bytes at %d", class, reg, s.Size, s.Off)
}
