package consume

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gosdt/gosdt/sdt/internal/pred"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// PredicateError is a predicate (TraceOptions.Where, AggOptions.Where) that does not
// compile for one of the probes a spec matched, or for any probe: nothing was switched
// on.
type PredicateError struct {
	Probe string // provider:module::name of the probe it was compiled for; "": wrong for any
	Expr  string
	Pos   int // byte offset in Expr
	Msg   string
}

func (e *PredicateError) Error() string {
	msg := "control: where: col " + strconv.Itoa(e.Pos+1) + ": " + e.Msg
	if e.Probe == "" {
		return msg // wrong whatever the probe (checkWhere)
	}
	return msg + " (probe " + e.Probe + ")"
}

// predicateError is pred's error err about src as a PredicateError for probe ("":
// any probe).
func predicateError(probe, src string, err error) *PredicateError {
	pe := &PredicateError{Probe: probe, Expr: src, Msg: err.Error()}
	if e, ok := errors.AsType[*pred.Error](err); ok {
		pe.Pos, pe.Msg = e.Pos, e.Msg
	}
	return pe
}

// checkWhere refuses a predicate that no probe could take (pred.Check), before any
// probe is matched: a command traced from its start defines its probes after the
// request reaches it, and each would be left out one by one, unsaid.
func checkWhere(src string) error {
	if src == "" {
		return nil
	}
	if err := pred.Check(src); err != nil {
		return predicateError("", src, err)
	}
	return nil
}

// Caret is two lines: the expression, then a '^' under the error's position.
func (e *PredicateError) Caret() string {
	return (&pred.Error{Expr: e.Expr, Pos: e.Pos, Msg: e.Msg}).Caret()
}

// compileWhere compiles src for each of probes, by id (nil for src ""): with its
// argument names and kinds. A probe that lacks an argument src names is left out
// (left[id]), as --by leaves out the probes without its argument; when every probe
// lacks one, or src is wrong in another way, the error names the probe.
func compileWhere(src string, probes []*registry.Probe, top uint32) (progs []*pred.Program, left []bool, err error) {
	if src == "" {
		return nil, nil, nil
	}
	progs, left = make([]*pred.Program, top), make([]bool, top)
	var lacking error
	for _, p := range probes {
		args := make([]pred.Arg, len(p.Kinds))
		for i, k := range p.Kinds {
			args[i].Kind = k
			if i < len(p.Args) {
				args[i].Name = p.Args[i]
			}
		}
		prog, err := pred.Compile(src, args)
		if err != nil {
			pe := predicateError(p.Provider+":"+p.Module+"::"+p.Name, src, err)
			if !strings.HasPrefix(pe.Msg, "unknown argument ") {
				return nil, nil, pe
			}
			left[p.ID] = true
			if lacking == nil {
				lacking = pe
			}
			continue
		}
		progs[p.ID] = prog
	}
	for _, p := range probes {
		if !left[p.ID] {
			return progs, left, nil
		}
	}
	return nil, nil, lacking
}

// whereMessage is a predicate error as the server tells a client: one line, then the
// expression with a caret under the position.
func whereMessage(e *PredicateError) string {
	expr, caret, _ := strings.Cut(e.Caret(), "\n") // two lines: Caret keeps no other newline
	return strings.TrimPrefix(e.Error(), "control: ") + "\n  " + expr + "\n  " + caret
}
