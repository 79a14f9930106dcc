package ctlproto

import "fmt"

// FuncSig is the signature of a function that run-time probes are placed on, as sdtctl
// read it from the executable's DWARF (internal/funcsig): what names and types its
// probes' arguments get. The process holds Spills against the function's own morestack
// spill block and refuses a signature that does not match the code it runs.
type FuncSig struct {
	Func    string     // as the runtime names it: "example.com/app/store.(*DB).Get"
	Spills  []Spill    // the spill block the signature implies, in the order of Off
	Params  []SigValue // the receiver first
	Results []SigValue
}

// Spill is one register argument's store in a morestack spill block (arch.Spill).
type Spill struct {
	Reg, Size uint8 // Reg: integer register i, or 32+i for floating-point register i
	Off       int32
}

// SigValue is a parameter or a result: its name, Go type, kind (funcsig.Kind) and the
// registers it comes in (none: on the stack, which a probe does not read).
type SigValue struct {
	Name, Type, Kind string
	Words            []SigWord
}

// SigWord is one register of a value.
type SigWord struct {
	Float     bool
	Reg, Size uint8
}

// Limits on signatures in one request.
const (
	MaxSigs   = 256 // functions
	MaxValues = 64  // parameters or results of one
	MaxWords  = 32  // registers of one value
)

// Field tags of FuncSig and SigValue.
const (
	tsFunc = 1 + iota
	tsSpills
	tsParam
	tsResult
)

const (
	tvName = 1 + iota
	tvType
	tvKind
	tvWords
)

func (s *FuncSig) append(e *enc) {
	e.str(tsFunc, s.Func)
	var b []byte
	for _, sp := range s.Spills {
		b = append(b, sp.Reg, sp.Size, byte(sp.Off), byte(sp.Off>>8), byte(sp.Off>>16), byte(sp.Off>>24))
	}
	e.bytes(tsSpills, b)
	for i := range s.Params {
		e.msg(tsParam, s.Params[i].append)
	}
	for i := range s.Results {
		e.msg(tsResult, s.Results[i].append)
	}
}

func (s *FuncSig) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case tsFunc:
			s.Func = d.str()
		case tsSpills:
			b := d.bytes()
			if len(b)%6 != 0 || len(b)/6 > MaxWords*MaxValues {
				d.fail("a signature's spills")
				return true
			}
			for ; len(b) > 0; b = b[6:] {
				s.Spills = append(s.Spills, Spill{b[0], b[1], int32(uint32(b[2]) | uint32(b[3])<<8 | uint32(b[4])<<16 | uint32(b[5])<<24)})
			}
		case tsParam, tsResult:
			vs := &s.Params
			if tag == tsResult {
				vs = &s.Results
			}
			if len(*vs) >= MaxValues {
				d.fail(fmt.Sprintf("more than %d values in a signature", MaxValues))
				return true
			}
			*vs = append(*vs, SigValue{})
			d.msg((*vs)[len(*vs)-1].decode)
		default:
			d.fail(fmt.Sprintf("unknown field %d in a signature", tag))
		}
		return true
	})
}

func (v *SigValue) append(e *enc) {
	e.str(tvName, v.Name)
	e.str(tvType, v.Type)
	e.str(tvKind, v.Kind)
	var b []byte
	for _, w := range v.Words {
		f := byte(0)
		if w.Float {
			f = 1
		}
		b = append(b, f, w.Reg, w.Size)
	}
	e.bytes(tvWords, b)
}

func (v *SigValue) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case tvName:
			v.Name = d.str()
		case tvType:
			v.Type = d.str()
		case tvKind:
			v.Kind = d.str()
		case tvWords:
			b := d.bytes()
			if len(b)%3 != 0 || len(b)/3 > MaxWords {
				d.fail("a value's registers")
				return true
			}
			for ; len(b) > 0; b = b[3:] {
				v.Words = append(v.Words, SigWord{b[0] != 0, b[1], b[2]})
			}
		default:
			d.fail(fmt.Sprintf("unknown field %d in a signature's value", tag))
		}
		return true
	})
}
