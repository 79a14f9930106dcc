package pred

import (
	"strconv"
	"unicode/utf8"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// Limits on a predicate: it runs in the traced process on every fire.
const (
	MaxLen   = 1024 // bytes of source
	MaxDepth = 64   // nested parentheses and !
)

// Arg is one argument of the probe a predicate is compiled for.
type Arg struct {
	Name string // "" when it has none: only argN names it
	Kind registry.Kind
}

// Error is a predicate that does not compile, and where.
type Error struct {
	Expr string
	Pos  int // byte offset in Expr
	Msg  string
}

// Error is one line: "where: col N: msg", N counting from 1.
func (e *Error) Error() string {
	return "where: col " + strconv.Itoa(e.Pos+1) + ": " + e.Msg
}

// Caret is two lines: the expression, then a '^' under the error's position.
func (e *Error) Caret() string {
	// One line, and the caret under the character, not the byte: control
	// characters print as spaces, a multi-byte character takes one column.
	line := []byte(e.Expr)
	for i, c := range line {
		if c < ' ' || c == 0x7f {
			line[i] = ' '
		}
	}
	pos := min(max(e.Pos, 0), len(e.Expr))
	line = append(line, '\n')
	for range utf8.RuneCountInString(e.Expr[:pos]) {
		line = append(line, ' ')
	}
	return string(append(line, '^'))
}

// Program is a compiled predicate. It is immutable: Match may run on any number of
// goroutines at once. A nil *Program matches every fire.
type Program struct {
	code []ins
	need int    // arguments a fire must have: 1 + the highest index compared
	src  string // canonical
}

// Compile compiles src for a probe whose arguments are args. Its errors are *Error.
func Compile(src string, args []Arg) (*Program, error) {
	if len(args) > registry.MaxArgs {
		return nil, &Error{Expr: src, Msg: "a probe has at most " + strconv.Itoa(registry.MaxArgs) + " arguments, not " + strconv.Itoa(len(args))}
	}
	n, err := parse(src, args)
	if err != nil {
		return nil, err
	}
	if err := check(src, n, args); err != nil {
		return nil, err
	}
	return &Program{code: gen(n, args), need: need(n), src: format(n, args)}, nil
}

// Check reports what makes src wrong for every probe, before any probe is known (a
// command's probes are defined after sdtctl's request reaches it): its syntax, its
// limits, literals compared with literals of another kind, what is not a condition.
// Its errors are *Error. Whether a probe has the arguments src names, and of kinds
// it compares, only Compile tells.
func Check(src string) error {
	p := &parser{src: src, open: true}
	n, err := p.parse()
	if err != nil {
		return err
	}
	if err := check(src, n, p.args); err != nil {
		return err
	}
	return nil
}

// String is the predicate in canonical form: Compile of it gives the same program.
func (p *Program) String() string {
	if p == nil {
		return ""
	}
	return p.src
}
