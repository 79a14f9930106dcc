package funcsig

// Go's internal ABI (ABIInternal, $GOROOT/src/cmd/compile/abi-internal.md): which
// registers carry each parameter and result, by the document's algorithm.

// abi is one architecture's register sequences.
type abi struct {
	ints, floats []string
}

var abis = map[string]abi{
	"amd64": {
		ints:   []string{"AX", "BX", "CX", "DI", "SI", "R8", "R9", "R10", "R11"},
		floats: []string{"X0", "X1", "X2", "X3", "X4", "X5", "X6", "X7", "X8", "X9", "X10", "X11", "X12", "X13", "X14"},
	},
	"arm64": {
		ints:   []string{"R0", "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15"},
		floats: []string{"F0", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12", "F13", "F14", "F15"},
	},
}

func (a abi) regName(w Word) string {
	if w.Float {
		return a.floats[w.Reg]
	}
	return a.ints[w.Reg]
}

// The reflect.Kind numbers Go's DWARF gives every type (DW_AT_go_kind).
const (
	kBool = 1 + iota
	kInt
	kInt8
	kInt16
	kInt32
	kInt64
	kUint
	kUint8
	kUint16
	kUint32
	kUint64
	kUintptr
	kFloat32
	kFloat64
	kComplex64
	kComplex128
	kArray
	kChan
	kFunc
	kInterface
	kMap
	kPointer
	kSlice
	kString
	kStruct
	kUnsafePointer
)

const ptrSize = 8 // both architectures are 64-bit

// assigner runs the assignment of the receiver and arguments, or of the results: I
// and FP are the next integer and floating-point registers.
type assigner struct {
	abi   abi
	i, fp int
}

// assign assigns a value of type t: to registers, or (nil, false) to the stack, where
// a value of zero size also goes. A value that does not fit in the registers left
// releases those it took.
func (a *assigner) assign(t *gtype) ([]Word, bool) {
	if t.size == 0 {
		return nil, false
	}
	i, fp := a.i, a.fp
	words, ok := a.regAssign(nil, t, 0)
	if !ok {
		a.i, a.fp = i, fp
		return nil, false
	}
	return words, true
}

// regAssign register-assigns a value of type t that lies at off in the value being
// assigned, appending its words to ws.
func (a *assigner) regAssign(ws []Word, t *gtype, off int64) ([]Word, bool) {
	intReg := func(size int64, off int64) bool {
		if a.i >= len(a.abi.ints) {
			return false
		}
		ws = append(ws, Word{Reg: a.i, Size: uint8(size), Off: off})
		a.i++
		return true
	}
	floatReg := func(size int64, off int64) bool {
		if a.fp >= len(a.abi.floats) {
			return false
		}
		ws = append(ws, Word{Float: true, Reg: a.fp, Size: uint8(size), Off: off})
		a.fp++
		return true
	}
	ok := true
	switch t.kind {
	case kBool, kInt, kInt8, kInt16, kInt32, kInt64, kUint, kUint8, kUint16, kUint32, kUint64, kUintptr:
		// A boolean or integral type that fits in a register (on 64-bit, all of them).
		ok = t.size <= ptrSize && intReg(t.size, off)
	case kFloat32, kFloat64:
		ok = floatReg(t.size, off)
	case kComplex64, kComplex128:
		// The real and imaginary parts.
		ok = floatReg(t.size/2, off) && floatReg(t.size/2, off+t.size/2)
	case kPointer, kUnsafePointer, kMap, kChan, kFunc:
		ok = intReg(ptrSize, off)
	case kString, kInterface:
		// {ptr, len}; {type or itab, data}.
		ok = intReg(ptrSize, off) && intReg(ptrSize, off+ptrSize)
	case kSlice:
		ok = intReg(ptrSize, off) && intReg(ptrSize, off+ptrSize) && intReg(ptrSize, off+2*ptrSize)
	case kStruct:
		for _, f := range t.fields {
			if ws, ok = a.regAssign(ws, f.t, off+f.off); !ok {
				break
			}
		}
	case kArray:
		switch t.count {
		case 0:
		case 1:
			ws, ok = a.regAssign(ws, t.elem, off)
		default:
			ok = false // a non-trivial array goes on the stack
		}
	default:
		ok = false
	}
	return ws, ok
}

// assignSignature assigns f's parameters and results (types ps and rs) to registers
// or the stack, and lays out the spill slots of the register-assigned parameters.
func assignSignature(a abi, f *Func, ps, rs []*gtype) {
	in := assigner{abi: a}
	var stack int64 // the stack sequence S: stack-assigned arguments, then results
	for i, t := range ps {
		words, ok := in.assign(t)
		f.Params[i].Words, f.Params[i].OnStack = words, !ok
		if !ok {
			stack = alignUp(stack, t.align) + t.size
		}
	}
	stack = alignUp(stack, ptrSize)
	out := assigner{abi: a} // results begin again at register 0
	for i, t := range rs {
		words, ok := out.assign(t)
		f.Results[i].Words, f.Results[i].OnStack = words, !ok
		if !ok {
			stack = alignUp(stack, t.align) + t.size
		}
	}
	stack = alignUp(stack, ptrSize)
	// The spill space: each register-assigned argument in its memory layout.
	for i, t := range ps {
		if !f.Params[i].OnStack {
			stack = alignUp(stack, t.align)
			f.Params[i].spill = stack
			stack += t.size
		}
	}
}

func alignUp(x, a int64) int64 {
	if a <= 1 {
		return x
	}
	return (x + a - 1) / a * a
}
