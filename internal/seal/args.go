package seal

import (
	"fmt"
	"strings"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/usdt"
	"github.com/gosdt/gosdt/sled"
)

// shapeSizes is the note size of each GC shape a probe argument can have (package sdt's
// Arg constraint): negative for signed. Go leaves the upper bits of a narrow value's
// register unspecified; the size tells the tracer how many low bytes to take.
var shapeSizes = map[string]int{
	"int": -8, "int64": -8, "uint": 8, "uint64": 8, "uintptr": 8,
	"int32": -4, "uint32": 4, "int16": -2, "uint16": 2, "int8": -1, "uint8": 1, "bool": 1,
}

// argSpecs returns where the arguments of a fire call are, at the call, from the fire
// method's symbol: sdt.(*P2[go.shape.int,go.shape.string]).fire is called with the
// receiver, the instantiation's dictionary, then the arguments, in integer registers.
// A string takes two note arguments, its pointer and its length. Floats travel in
// floating-point registers, which tracers' argument specs do not name: the note stops
// at the first one, as at the first argument that does not fit in registers; why says
// so when that happens.
func argSpecs(a *arch.Offline, fireSym string) (args []usdt.Arg, why string) {
	if !strings.HasPrefix(fireSym, sled.ProbePackage()+".(*P") {
		// Latency and fbt probes compute their arguments (the duration, the
		// function's parameters) inside the fire method: none is in a register at the call.
		return nil, "its arguments are computed inside package sdt (a latency or fbt probe)"
	}
	i, j := strings.Index(fireSym, "["), strings.LastIndex(fireSym, "]")
	if i < 0 || j < i {
		return nil, "" // P0: no arguments, and not generic
	}
	regs := a.ArgRegs[2:]
	for _, shape := range strings.Split(fireSym[i+1:j], ",") {
		kind := strings.TrimPrefix(shape, "go.shape.")
		var want []int
		switch size, ok := shapeSizes[kind]; {
		case ok:
			want = []int{size}
		case kind == "string":
			want = []int{8, -8}
		case kind == "float32" || kind == "float64":
			return args, "a float argument is in a floating-point register"
		default:
			return args, fmt.Sprintf("argument shape %q", shape)
		}
		if len(want) > len(regs) {
			return args, "arguments beyond the integer registers are on the stack"
		}
		for _, size := range want {
			args = append(args, usdt.Arg{Size: size, Operand: regs[0]})
			regs = regs[1:]
		}
	}
	return args, ""
}
