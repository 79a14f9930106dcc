package seal

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/functab"
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

// argSlot is one note argument of a fire call: Size bytes (negative: signed) of the
// argument register ArgRegs[Reg].
type argSlot struct{ Size, Reg int }

// argSlots returns the note arguments of a fire call from the fire method's symbol:
// sdt.(*P2[go.shape.int,go.shape.string]).fire is called with the receiver, the
// instantiation's dictionary, then the arguments, in integer registers. A string
// takes two note arguments, its pointer and its length. Floats travel in
// floating-point registers, which tracers' argument specs do not name: the note stops
// at the first one, as at the first argument that does not fit in registers; why says
// so when that happens.
func argSlots(a *arch.Offline, fireSym string) (args []argSlot, why string) {
	if !strings.HasPrefix(fireSym, sled.ProbePackage()+".(*P") {
		// Latency and fbt probes compute their arguments (the duration, the
		// function's parameters) inside the fire method: none is in a register at the call.
		return nil, "its arguments are computed inside package sdt (a latency or fbt probe)"
	}
	i, j := strings.Index(fireSym, "["), strings.LastIndex(fireSym, "]")
	if i < 0 || j < i {
		return nil, "" // P0: no arguments, and not generic
	}
	reg := 2
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
		if reg+len(want) > len(a.ArgRegs) {
			return args, "arguments beyond the integer registers are on the stack"
		}
		for _, size := range want {
			args = append(args, argSlot{Size: size, Reg: reg})
			reg++
		}
	}
	return args, ""
}

// fbtFire is the fire method of generated fbt code's probes (sdt/internal/fbtrt).
func fbtFire() string { return sled.ProbePackage() + "/internal/fbtrt.(*Func).fire" }

// fbtSlots returns the note arguments of an fbt fire call, at call, of the site s:
// fire(c, at, v0, v1, v2, v3) with at a constant, the boundary in its low bits
// (1 entry, 2 return) and for an entry the number of integer parameters in v0.. above
// them; a return's v0 is its latency in nanoseconds. All are int64 (fbtrt's Func.Enter,
// Return). The constant is read from the straight-line code of the fire block, which
// starts at the end of the site.
func fbtSlots(a *arch.Offline, linked arch.Memory, tab *functab.Table, s sled.Site, call uint64) ([]argSlot, string) {
	const atReg, v0Reg = 2, 3 // fire's at and v0, after the receiver and the Call
	var at uint64
	known := false
	if a.ArgsAt != nil {
		locs, err := a.ArgsAt(linked, uint64(s.Addr)+uint64(s.Len), call, []int{atReg})
		if err == nil && locs[0].Const {
			at, known = locs[0].Value, true
		}
	}
	if fn := tab.Find(call); !known && fn >= 0 {
		// A fire block out of line (a JNE site's): the constants of the function's
		// code, in address order, as package definitions are read.
		name := func(pc uint64) string {
			if f := tab.Find(pc); f >= 0 {
				return string(tab.Name(f))
			}
			return ""
		}
		for _, c := range a.Calls(linked, tab.Entry(fn), tab.End(fn), func(t uint64) bool { return name(t) == fbtFire() }, name) {
			if c.PC == call && c.Known&(1<<atReg) != 0 {
				at, known = c.Args[atReg], true
			}
		}
	}
	if !known {
		return nil, "the fbt fire's boundary is not a constant at the call"
	}
	var n int
	switch at & 3 {
	case 1:
		n = int(at >> 2)
	case 2:
		n = 1
	}
	if n > len(a.ArgRegs)-v0Reg || n > 4 {
		return nil, fmt.Sprintf("the fbt fire's boundary %#x", at)
	}
	slots := make([]argSlot, n)
	for i := range slots {
		slots[i] = argSlot{Size: -8, Reg: v0Reg + i}
	}
	return slots, ""
}

// atCall is the note arguments of slots at the fire call: the argument registers.
func atCall(a *arch.Offline, slots []argSlot) []usdt.Arg {
	args := make([]usdt.Arg, len(slots))
	for i, s := range slots {
		args[i] = usdt.Arg{Size: s.Size, Operand: a.ArgRegs[s.Reg]}
	}
	return args
}

// atNOP is the note arguments of slots where ArgsAt found them, at a probe NOP before
// the fire block, or why they cannot be given there: a location holds fewer bytes
// than the argument, or is a link-time address in a position-independent binary.
func atNOP(slots []argSlot, locs []arch.ArgLoc, pie bool) ([]usdt.Arg, string) {
	args := make([]usdt.Arg, len(slots))
	for i, s := range slots {
		l, size := locs[i], s.Size
		if size < 0 {
			size = -size
		}
		switch {
		case l.Static && pie:
			return nil, fmt.Sprintf("argument %d is a link-time address in a position-independent binary", i)
		case l.Const:
			args[i] = usdt.Arg{Size: s.Size, Operand: "$" + constant(l.Value, s.Size)}
		case size > l.Bytes:
			return nil, fmt.Sprintf("argument %d: %s holds %d of its %d bytes", i, l.Operand, l.Bytes, size)
		default:
			args[i] = usdt.Arg{Size: s.Size, Operand: l.Operand}
		}
	}
	return args, ""
}

// constant is v as an argument of size bytes (negative: signed) reads it, in decimal.
func constant(v uint64, size int) string {
	bits := 8 * size
	if size < 0 {
		bits = -bits
		if bits < 64 {
			return strconv.FormatInt(int64(v<<(64-bits))>>(64-bits), 10)
		}
		return strconv.FormatInt(int64(v), 10)
	}
	if bits < 64 {
		v &= 1<<bits - 1
	}
	return strconv.FormatUint(v, 10)
}
