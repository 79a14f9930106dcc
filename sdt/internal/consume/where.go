package consume

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gosdt/gosdt/sdt/internal/pred"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// PredicateError is a predicate (TraceOptions.Where, AggOptions.Where) that does not
// compile for one of the probes a spec matched: nothing was switched on.
type PredicateError struct {
	Probe string // provider:module::name of the probe it was compiled for
	Expr  string
	Pos   int // byte offset in Expr
	Msg   string
}

func (e *PredicateError) Error() string {
	return "control: where: col " + strconv.Itoa(e.Pos+1) + ": " + e.Msg + " (probe " + e.Probe + ")"
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
			pe := &PredicateError{Probe: p.Provider + ":" + p.Module + "::" + p.Name, Expr: src, Msg: err.Error()}
			if e, ok := errors.AsType[*pred.Error](err); ok {
				pe.Pos, pe.Msg = e.Pos, e.Msg
			}
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
