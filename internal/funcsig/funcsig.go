package funcsig

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/gosdt/gosdt/arch"
)

// ErrNoDWARF means the executable carries no debug information (built with
// -ldflags=-w, or stripped): a caller falls back to the argument words, unnamed.
var ErrNoDWARF = errors.New("funcsig: the executable has no DWARF (built with -ldflags=-w or stripped): arguments are words arg0..")

// Kind is how a value is printed.
type Kind string

// The kinds. A map, a channel and a func value are one pointer word; an array, a
// struct and a complex number are KindOther.
const (
	KindInt       Kind = "int"
	KindUint      Kind = "uint"
	KindBool      Kind = "bool"
	KindFloat     Kind = "float"
	KindString    Kind = "string"
	KindPointer   Kind = "pointer"
	KindSlice     Kind = "slice"
	KindInterface Kind = "interface"
	KindError     Kind = "error"
	KindOther     Kind = "other"
)

// Func is one function's signature. The Words of Params, taken in order, are an entry
// probe's argument words (fprobe.Args) in order; a result's integer word Reg is its
// place among a return event's result words.
type Func struct {
	Name    string  // as the runtime names it: "example.com/app/store.(*DB).Get"
	Arch    string  // GOARCH of the executable
	Params  []Value // the receiver first, then the parameters, in declaration order
	Results []Value
}

// Value is one parameter or result.
type Value struct {
	Name string // DWARF's, "~" dropped from unnamed ones ("r0", "p1"); ".dict": a shaped generic's dictionary
	Type string // DWARF's type name: "*example.com/app/store.DB", "[]uint8", "error"
	Kind Kind
	Size int64 // bytes
	// Words are the registers the ABI passes the value in, in the order of its
	// memory layout; nil when it goes on the stack (OnStack) or has no size.
	Words   []Word
	OnStack bool
	spill   int64 // a register-assigned parameter's spill slot, from the first argument slot
}

// Word is one register of a value.
type Word struct {
	Float bool  // a floating-point register (X0.., F0..); else an integer one
	Reg   int   // its index in the ABI's sequence of integer or floating-point registers
	Size  uint8 // bytes the value has in it: 1, 2, 4 or 8 (an integer is zero-extended to a word)
	Off   int64 // where the word lies in the value's memory layout
}

// InRegisters reports whether v is passed wholly in registers, which a probe reads.
func (v *Value) InRegisters() bool { return len(v.Words) > 0 }

// Spills returns the morestack spill block f's code must have when the ABI passes its
// parameters as the DWARF says, as arch's readers of the code report it (Off from the
// first argument slot, Reg the ABI index or arch.FloatReg+index), in the order of Off:
// the order of fprobe.Args's words. A process compares it with the function's own
// block and refuses a signature that does not match the code it runs.
func (f *Func) Spills() []arch.Spill {
	var s []arch.Spill
	for _, p := range f.Params {
		for _, w := range p.Words {
			r := uint8(w.Reg)
			if w.Float {
				r += arch.FloatReg
			}
			s = append(s, arch.Spill{Reg: r, Size: w.Size, Off: int32(p.spill + w.Off)})
		}
	}
	return s
}

// String writes f as Go would declare it, with each value's registers:
// "main.F(a int [AX], s string [BX CX]) (r0 bool [AX])".
func (f *Func) String() string {
	regs := abis[f.Arch]
	list := func(vs []Value) string {
		s := ""
		for i, v := range vs {
			if i > 0 {
				s += ", "
			}
			s += v.Name + " " + v.Type + " ["
			if v.OnStack {
				s += "stack"
			}
			for j, w := range v.Words {
				if j > 0 {
					s += " "
				}
				s += regs.regName(w)
			}
			s += "]"
		}
		return s
	}
	return fmt.Sprintf("%s(%s) (%s)", f.Name, list(f.Params), list(f.Results))
}

// pkgDirs is the directories of a package path in a type name: "example.com/app/".
var pkgDirs = regexp.MustCompile(`(?:[A-Za-z0-9_.~-]+/)+`)

// ShortType writes a DWARF type name with each package by its last element, as Go
// source names it: "*example.com/app/store.DB" is "*store.DB".
func ShortType(t string) string { return pkgDirs.ReplaceAllString(t, "") }
