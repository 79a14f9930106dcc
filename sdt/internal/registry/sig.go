package registry

import "github.com/gosdt/gosdt/arch"

// FuncSig is what sdtctl read of a function's signature (its DWARF, by Go's ABI), for
// its run-time probes: the spill block its code must have, and where its parameters
// and results are. The control server converts the protocol's to it (Signatures).
type FuncSig struct {
	Func    string       // as the runtime names it: "example.com/app/store.(*DB).Get"
	Spills  []arch.Spill // the spill block the signature implies, in the order of Off
	Params  []SigValue   // the receiver first
	Results []SigValue
}

// SigValue is a parameter or a result: its name, Go type, kind (funcsig.Kind) and the
// registers it comes in (none: on the stack, which a probe does not read).
type SigValue struct {
	Words            []SigWord
	Name, Type, Kind string
}

// SigWord is one register of a value: an integer or floating-point one, by its index
// in the ABI's sequence, and the value's bytes in it.
type SigWord struct {
	Reg, Size uint8
	Float     bool // a floating-point register; else an integer one
}
