package pred

import (
	"strconv"
	"strings"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

type nodeKind uint8

const (
	nOr nodeKind = iota
	nAnd
	nNot
	nCmp
	nArg
	nLit
)

// node is the parsed predicate. Every node keeps its source position so that type
// errors, found after parsing, still point at the offending operand.
type node struct {
	kind  nodeKind
	pos   int   // of the operator, or of the operand
	start int   // of the whole, parentheses included
	op    uint8 // nCmp: index in cmpOps
	arg   uint8 // nArg
	lit   value // nLit
	l, r  *node // nOr, nAnd, nCmp; nNot uses l
}

// cmpOps are the comparison operators, with the outcomes of a comparison for which
// each holds.
var cmpOps = [...]struct {
	text string
	mask uint8
}{
	{"==", eq},
	{"!=", lt | gt | unordered},
	{"<", lt},
	{"<=", lt | eq},
	{">", gt},
	{">=", gt | eq},
}

type token uint8

const (
	tEOF token = iota
	tIdent
	tInt
	tStr
	tCmp // cmpOps[op]
	tAnd
	tOr
	tNot
	tLParen
	tRParen
)

type parser struct {
	src   string
	args  []Arg
	open  bool // Check: every name is an argument, of a kind only a probe tells
	off   int  // of the next byte to lex
	tok   token
	pos   int    // of tok
	text  string // of tok
	op    uint8  // of a tCmp
	lit   value  // of a tInt or tStr
	depth int
}

func parse(src string, args []Arg) (*node, error) {
	return (&parser{src: src, args: args}).parse()
}

func (p *parser) parse() (*node, error) {
	src := p.src
	if len(src) > MaxLen {
		return nil, &Error{Expr: src, Pos: MaxLen, Msg: "longer than " + strconv.Itoa(MaxLen) + " bytes"}
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok == tEOF {
		return nil, p.errAt(p.pos, "empty expression")
	}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	switch p.tok {
	case tEOF:
		return n, nil
	case tRParen:
		return nil, p.errAt(p.pos, "unbalanced ): no ( to close")
	}
	return nil, p.errAt(p.pos, "unexpected "+p.describe()+" after a complete expression")
}

// errAt is the parser's error at pos. Not inlined: each of its 17 callers carried
// a copy of the allocation.
//
//go:noinline
func (p *parser) errAt(pos int, msg string) *Error {
	return &Error{Expr: p.src, Pos: pos, Msg: msg}
}

func (p *parser) describe() string {
	switch p.tok {
	case tEOF:
		return "end of expression"
	case tStr:
		return "string " + strconv.Quote(p.lit.s)
	}
	return strconv.Quote(p.text)
}

func (p *parser) or() (*node, error) {
	l, err := p.and()
	for err == nil && p.tok == tOr {
		pos := p.pos
		if err = p.next(); err != nil {
			break
		}
		var r *node
		if r, err = p.and(); err == nil {
			l = &node{kind: nOr, pos: pos, start: l.start, l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) and() (*node, error) {
	l, err := p.cmp()
	for err == nil && p.tok == tAnd {
		pos := p.pos
		if err = p.next(); err != nil {
			break
		}
		var r *node
		if r, err = p.cmp(); err == nil {
			l = &node{kind: nAnd, pos: pos, start: l.start, l: l, r: r}
		}
	}
	return l, err
}

func (p *parser) cmp() (*node, error) {
	l, err := p.unary()
	if err != nil || p.tok != tCmp {
		return l, err
	}
	op, pos := p.op, p.pos
	if err := p.next(); err != nil {
		return nil, err
	}
	r, err := p.unary()
	if err != nil {
		return nil, err
	}
	if p.tok == tCmp {
		return nil, p.errAt(p.pos, "comparisons do not chain: join them with && or ||")
	}
	return &node{kind: nCmp, pos: pos, start: l.start, op: op, l: l, r: r}, nil
}

func (p *parser) unary() (*node, error) {
	pos := p.pos
	switch p.tok {
	case tNot, tLParen:
		if p.depth++; p.depth > MaxDepth {
			return nil, p.errAt(pos, "nested deeper than "+strconv.Itoa(MaxDepth))
		}
		defer func() { p.depth-- }()
	}
	switch p.tok {
	case tNot:
		if err := p.next(); err != nil {
			return nil, err
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &node{kind: nNot, pos: pos, start: pos, l: x}, nil
	case tLParen:
		if err := p.next(); err != nil {
			return nil, err
		}
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.tok != tRParen {
			if p.tok == tEOF {
				return nil, p.errAt(pos, "unbalanced (: no ) closes it")
			}
			return nil, p.errAt(p.pos, "expected ) or an operator, found "+p.describe())
		}
		x.start = pos
		return x, p.next()
	case tIdent:
		return p.ident()
	case tInt, tStr:
		n := &node{kind: nLit, pos: pos, start: pos, lit: p.lit}
		return n, p.next()
	}
	return nil, p.errAt(pos, "expected an argument, a literal, ! or (, found "+p.describe())
}

func (p *parser) ident() (*node, error) {
	pos, name := p.pos, p.text
	n := &node{kind: nArg, pos: pos, start: pos}
	switch i, ok := lookup(name, p.args); {
	case name == "true" || name == "false":
		n.kind, n.lit = nLit, value{kind: registry.Bool}
		if name == "true" {
			n.lit.bits = 1
		}
	case ok:
		n.arg = uint8(i)
	case p.open:
		n.arg = uint8(p.name(name))
	default:
		return nil, p.errAt(pos, "unknown argument "+strconv.Quote(name)+": "+have(p.args))
	}
	return n, p.next()
}

// name adds the argument name stands for to an open parser's, of kind Unknown, and
// returns its index: argN the Nth (the arguments before it added unnamed), any other
// name one of its own.
func (p *parser) name(name string) int {
	if i, ok := argN(name); ok {
		for len(p.args) <= i {
			p.args = append(p.args, Arg{Kind: registry.Unknown})
		}
		return i
	}
	p.args = append(p.args, Arg{Name: name, Kind: registry.Unknown})
	return len(p.args) - 1
}

// lookup resolves an identifier: argN is the Nth argument, whatever the names; a
// name is the first argument of that name.
func lookup(name string, args []Arg) (int, bool) {
	if i, ok := argN(name); ok {
		return i, i < len(args)
	}
	for i, a := range args {
		if a.Name == name {
			return i, true
		}
	}
	return 0, false
}

func argN(name string) (int, bool) {
	if len(name) != 4 || name[:3] != "arg" || name[3] < '0' || name[3] > '9' {
		return 0, false
	}
	return int(name[3] - '0'), true
}

func have(args []Arg) string {
	if len(args) == 0 {
		return "this probe has no arguments"
	}
	var b strings.Builder
	b.WriteString("this probe has ")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("arg" + strconv.Itoa(i))
		if a.Name != "" {
			b.WriteString(" (" + a.Name + ")")
		}
	}
	return b.String()
}

// next lexes the next token.
func (p *parser) next() error {
	s := p.src
	for p.off < len(s) && (s[p.off] == ' ' || s[p.off] == '\t' || s[p.off] == '\n' || s[p.off] == '\r') {
		p.off++
	}
	p.pos = p.off
	if p.off == len(s) {
		p.tok, p.text = tEOF, ""
		return nil
	}
	c := s[p.off]
	two := ""
	if p.off+1 < len(s) {
		two = s[p.off : p.off+2]
	}
	switch {
	case isLetter(c):
		end := p.off + 1
		for end < len(s) && (isLetter(s[end]) || isDigit(s[end])) {
			end++
		}
		p.tok = tIdent
		p.text, p.off = s[p.off:end], end
		return nil
	case isDigit(c) || c == '-' && p.off+1 < len(s) && isDigit(s[p.off+1]):
		return p.number()
	case c == '"':
		return p.string()
	case two == "&&":
		p.tok = tAnd
	case two == "||":
		p.tok = tOr
	case c == '(':
		p.tok = tLParen
	case c == ')':
		p.tok = tRParen
	default:
		for i := len(cmpOps) - 1; i >= 0; i-- { // >= before >
			if strings.HasPrefix(s[p.off:], cmpOps[i].text) {
				p.tok, p.op = tCmp, uint8(i)
				p.text, p.off = cmpOps[i].text, p.off+len(cmpOps[i].text)
				return nil
			}
		}
		if c == '!' {
			p.tok = tNot
			break
		}
		msg := "unexpected character " + strconv.QuoteRune(rune(c))
		switch c {
		case '=':
			msg += ": == compares"
		case '&', '|':
			msg += ": && and || join conditions"
		}
		if c >= 0x80 {
			msg = "unexpected byte 0x" + strconv.FormatUint(uint64(c), 16)
		}
		return p.errAt(p.off, msg)
	}
	n := 1
	if p.tok == tAnd || p.tok == tOr {
		n = 2
	}
	p.text, p.off = s[p.off:p.off+n], p.off+n
	return nil
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// number lexes an integer literal: a negative one is an int64, a non-negative one an
// int64 when it fits, else a uint64.
func (p *parser) number() error {
	s, start := p.src, p.off
	end := start
	if s[end] == '-' {
		end++
	}
	digits := end
	base := 10
	if strings.HasPrefix(s[end:], "0x") || strings.HasPrefix(s[end:], "0X") {
		base, end, digits = 16, end+2, end+2
	}
	for end < len(s) && (isLetter(s[end]) || isDigit(s[end])) {
		end++
	}
	p.tok, p.text, p.off = tInt, s[start:end], end
	text := s[digits:end]
	if base == 10 && len(text) > 1 && text[0] == '0' {
		return p.errAt(start, "integer "+p.text+" has a leading zero: write it in decimal, or in hex with 0x")
	}
	u, err := strconv.ParseUint(text, base, 64)
	if err != nil {
		if e, ok := err.(*strconv.NumError); ok && e.Err == strconv.ErrRange {
			return p.errAt(start, "integer "+p.text+" out of range")
		}
		return p.errAt(start, "malformed integer "+strconv.Quote(p.text))
	}
	switch {
	case s[start] == '-' && u > 1<<63:
		return p.errAt(start, "integer "+p.text+" out of range")
	case s[start] == '-':
		p.lit = value{kind: registry.Int, bits: -u}
	case u > 1<<63-1:
		p.lit = value{kind: registry.Uint, bits: u}
	default:
		p.lit = value{kind: registry.Int, bits: u}
	}
	return nil
}

func (p *parser) string() error {
	s, start := p.src, p.off
	var b []byte
	for i := start + 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			p.tok, p.text, p.off = tStr, s[start:i+1], i+1
			p.lit = value{kind: registry.String, s: string(b)}
			return nil
		case '\\':
			if i+1 == len(s) {
				return p.errAt(start, "unterminated string")
			}
			i++
			switch s[i] {
			case '"', '\\':
				b = append(b, s[i])
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			default:
				esc := s[i-1 : i+1]
				if s[i] < ' ' || s[i] >= 0x7f {
					esc = strconv.Quote(esc)
				}
				return p.errAt(i-1, "unknown escape "+esc+`: strings know \" \\ \n \t`)
			}
		default:
			b = append(b, c)
		}
	}
	return p.errAt(start, "unterminated string")
}

// quote writes s as a string literal that lexes back to s.
func quote(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// class is what a value compares as.
type class uint8

const (
	cNum class = iota
	cStr
	cBool
	cAny // a kind only fires tell
)

func classOf(k registry.Kind) class {
	switch k {
	case registry.Int, registry.Uint, registry.Float:
		return cNum
	case registry.String:
		return cStr
	case registry.Bool:
		return cBool
	}
	return cAny
}

var classNames = [...]string{cNum: "number", cStr: "string", cBool: "bool"}

func (n *node) class(args []Arg) class {
	if n.kind == nArg {
		return classOf(args[n.arg].Kind)
	}
	return classOf(n.lit.kind)
}

// check type-checks the tree: comparisons of like with like, conditions of bools.
func check(src string, n *node, args []Arg) *Error {
	switch n.kind {
	case nOr, nAnd:
		if err := check(src, n.l, args); err != nil {
			return err
		}
		return check(src, n.r, args)
	case nNot:
		return check(src, n.l, args)
	case nArg, nLit:
		if c := n.class(args); c != cBool && c != cAny {
			return &Error{Expr: src, Pos: n.pos, Msg: "a " + classNames[c] + " is not a condition: compare it"}
		}
		return nil
	}
	for _, o := range []*node{n.l, n.r} {
		if o.kind != nArg && o.kind != nLit {
			return &Error{Expr: src, Pos: o.start, Msg: cmpOps[n.op].text + " compares arguments and literals, not conditions"}
		}
	}
	cl, cr := n.l.class(args), n.r.class(args)
	switch {
	case cl != cAny && cr != cAny && cl != cr:
		return &Error{Expr: src, Pos: n.r.pos, Msg: "cannot compare a " + classNames[cl] + " with a " + classNames[cr]}
	case (cl == cBool || cr == cBool) && n.op > 1:
		return &Error{Expr: src, Pos: n.pos, Msg: "bools are compared only with == and !="}
	}
	return nil
}

// format writes the tree in canonical form: arguments by name where the name
// resolves back to them, decimal integers, the parentheses precedence needs.
func format(n *node, args []Arg) string {
	var b strings.Builder
	formatTo(&b, n, args)
	return b.String()
}

func formatTo(b *strings.Builder, n *node, args []Arg) {
	switch n.kind {
	case nOr, nAnd:
		op := " || "
		if n.kind == nAnd {
			op = " && "
		}
		formatOperand(b, n.l, args, n.kind == nAnd && n.l.kind == nOr)
		b.WriteString(op)
		formatOperand(b, n.r, args, n.r.kind == n.kind || n.kind == nAnd && n.r.kind == nOr)
	case nNot:
		b.WriteByte('!')
		formatOperand(b, n.l, args, n.l.kind == nOr || n.l.kind == nAnd || n.l.kind == nCmp)
	case nCmp:
		formatTo(b, n.l, args)
		b.WriteString(" " + cmpOps[n.op].text + " ")
		formatTo(b, n.r, args)
	case nArg:
		name := args[n.arg].Name
		if i, ok := lookup(name, args); !ok || i != int(n.arg) || !isIdent(name) || name == "true" || name == "false" {
			name = "arg" + strconv.Itoa(int(n.arg))
		}
		b.WriteString(name)
	case nLit:
		switch n.lit.kind {
		case registry.Int:
			b.WriteString(strconv.FormatInt(int64(n.lit.bits), 10))
		case registry.Uint:
			b.WriteString(strconv.FormatUint(n.lit.bits, 10))
		case registry.String:
			b.WriteString(quote(n.lit.s))
		case registry.Bool:
			b.WriteString(strconv.FormatBool(n.lit.bits != 0))
		}
	}
}

func formatOperand(b *strings.Builder, n *node, args []Arg, paren bool) {
	if paren {
		b.WriteByte('(')
	}
	formatTo(b, n, args)
	if paren {
		b.WriteByte(')')
	}
}

func isIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}
