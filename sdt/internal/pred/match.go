package pred

import (
	"math"
	"strings"

	"github.com/gosdt/gosdt/sdt/internal/fprobe"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// The outcomes of a comparison; an operator holds for a set of them. fprobe's,
// whose return path runs the same programs (Direct).
const (
	lt        uint8 = fprobe.PredLt
	eq        uint8 = fprobe.PredEq
	gt        uint8 = fprobe.PredGt
	unordered uint8 = fprobe.PredUnordered // a NaN
)

// value is a literal, or an argument as a fire stores it.
type value struct {
	kind registry.Kind
	bits uint64
	s    string
}

// opcode is one of fprobe's Pred* tests, which say what each does: the return path
// runs the same programs (Direct).
type opcode = uint8

// ins is one test of a program. The program starts at its first instruction and
// goes to t when the test holds, to f when it does not; all jumps go forward, to
// another instruction or to accept (len(code)) or reject (len(code)+1). && and ||
// short-circuit by their jumps, ! swaps them: no stack, no boolean values. A tree of
// closures was as fast (BenchmarkMatch); flat code is one allocation and compares for
// equality, which the fuzzer uses.
type ins struct {
	op   opcode
	mask uint8 // the outcomes for which the test holds
	x, y uint8 // argument indexes
	lk   registry.Kind
	t, f int32
	k    uint64
	s    string
}

// Match reports whether a fire's arguments satisfy the predicate. It neither
// allocates nor locks. a holds the fires of the probe the program was compiled for; a
// fire that lacks an argument the predicate compares, or has it of another kind (an
// fbt argument of kind Unknown, a fire of another probe), does not match.
func (p *Program) Match(a *registry.Args) bool {
	if p == nil {
		return true
	}
	if a.N < p.need {
		return false
	}
	code := p.code
	pc := 0
	for pc < len(code) {
		in := &code[pc]
		var c uint8
		switch in.op {
		case fprobe.PredConst:
			c = in.mask
		case fprobe.PredBool:
			if a.Kinds[in.x] != registry.Bool {
				return false
			}
			c = in.mask & -uint8(a.Slots[in.x]&1) // mask when true, 0 when false
		case fprobe.PredInt:
			if a.Kinds[in.x] != registry.Int {
				return false
			}
			c = in.mask & cmp3(int64(a.Slots[in.x]), int64(in.k))
		case fprobe.PredUint:
			if a.Kinds[in.x] != registry.Uint {
				return false
			}
			c = in.mask & cmp3(a.Slots[in.x], in.k)
		case fprobe.PredStrEq:
			if a.Kinds[in.x] != registry.String {
				return false
			}
			if equal(a.Strs[in.x], in.s) {
				c = in.mask & eq
			} else {
				c = in.mask &^ eq
			}
		case fprobe.PredStr:
			if a.Kinds[in.x] != registry.String {
				return false
			}
			c = in.mask & (lt << (strings.Compare(a.Strs[in.x], in.s) + 1))
		case fprobe.PredArgs:
			o, ok := compare(value{a.Kinds[in.x], a.Slots[in.x], a.Strs[in.x]}, value{a.Kinds[in.y], a.Slots[in.y], a.Strs[in.y]})
			if !ok {
				return false
			}
			c = in.mask & o
		case fprobe.PredAny:
			o, ok := compare(value{a.Kinds[in.x], a.Slots[in.x], a.Strs[in.x]}, value{in.lk, in.k, in.s})
			if !ok {
				return false
			}
			c = in.mask & o
		}
		if c != 0 {
			pc = int(in.t)
		} else {
			pc = int(in.f)
		}
	}
	return pc == len(code)
}

// equal is s == t, faster for the short strings predicates compare (a path, a
// method): a byte loop costs less than the call to runtime.memequal.
func equal(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	if len(s) > 16 {
		return s == t
	}
	for i := 0; i < len(s); i++ {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// cmp3 is the outcome of x against y, neither a NaN.
func cmp3[T int64 | uint64 | float64](x, y T) uint8 {
	switch {
	case x < y:
		return lt
	case x > y:
		return gt
	}
	return eq
}

// compare is the outcome of comparing x with y, false when they cannot be compared:
// numbers as mathematics does whatever their kinds, strings by bytes, bools for
// equality (true is greater).
func compare(x, y value) (uint8, bool) {
	cx, cy := classOf(x.kind), classOf(y.kind)
	if cx != cy || cx == cAny {
		return 0, false
	}
	switch cx {
	case cStr:
		return lt << (strings.Compare(x.s, y.s) + 1), true
	case cBool:
		return cmp3(x.bits&1, y.bits&1), true
	}
	if x.kind == registry.Float || y.kind == registry.Float {
		if y.kind == registry.Float && x.kind != registry.Float {
			return flip(cmpFloat(math.Float64frombits(y.bits), x)), true
		}
		return cmpFloat(math.Float64frombits(x.bits), y), true
	}
	switch {
	case x.kind == y.kind && x.kind == registry.Int:
		return cmp3(int64(x.bits), int64(y.bits)), true
	case x.kind == registry.Int && int64(x.bits) < 0:
		return lt, true // y is a Uint
	case y.kind == registry.Int && int64(y.bits) < 0:
		return gt, true // x is a Uint
	}
	return cmp3(x.bits, y.bits), true
}

// flip is the outcome of y against x from that of x against y.
func flip(o uint8) uint8 {
	switch o {
	case lt:
		return gt
	case gt:
		return lt
	}
	return o
}

// cmpFloat compares f exactly with a number y of any kind: converting an integer
// to a float64 would round it.
func cmpFloat(f float64, y value) uint8 {
	switch {
	case f != f:
		return unordered
	case y.kind == registry.Float:
		g := math.Float64frombits(y.bits)
		if g != g {
			return unordered
		}
		return cmp3(f, g)
	case y.kind == registry.Int || y.bits <= math.MaxInt64:
		switch {
		case f < -(1 << 63):
			return lt
		case f >= 1<<63:
			return gt
		}
		// In range, f's integer part is exact as an int64; its fraction breaks a tie.
		if o := cmp3(int64(f), int64(y.bits)); o != eq {
			return o
		}
		return cmp3(f, float64(int64(f)))
	}
	// y is a Uint above MaxInt64.
	switch {
	case f < 1<<63:
		return lt
	case f >= 1<<64:
		return gt
	}
	return cmp3(uint64(f), y.bits) // f is integral this large
}

func need(n *node) int {
	switch n.kind {
	case nArg:
		return int(n.arg) + 1
	case nLit:
		return 0
	case nNot:
		return need(n.l)
	}
	return max(need(n.l), need(n.r))
}

// gen compiles the tree into tests and forward jumps.
func gen(n *node, args []Arg) []ins {
	g := &generator{args: args}
	g.emit(n, accept, reject)
	end := int32(len(g.code))
	for i := range g.code {
		g.code[i].t = g.resolve(g.code[i].t, end)
		g.code[i].f = g.resolve(g.code[i].f, end)
	}
	return g.code
}

// Labels while generating: accept, reject, or an index in generator.labels.
const (
	accept int32 = -1
	reject int32 = -2
)

type generator struct {
	args   []Arg
	code   []ins
	labels []int32 // the instruction each label stands before
}

func (g *generator) resolve(l, end int32) int32 {
	switch l {
	case accept:
		return end
	case reject:
		return end + 1
	}
	return g.labels[l]
}

// emit emits n's tests so that they go to t when n holds and to f when not.
func (g *generator) emit(n *node, t, f int32) {
	switch n.kind {
	case nAnd, nOr:
		l := int32(len(g.labels))
		g.labels = append(g.labels, 0)
		if n.kind == nAnd {
			g.emit(n.l, l, f)
		} else {
			g.emit(n.l, t, l)
		}
		g.labels[l] = int32(len(g.code))
		g.emit(n.r, t, f)
		return
	case nNot:
		g.emit(n.l, f, t)
		return
	}
	in := g.test(n)
	in.t, in.f = t, f
	g.code = append(g.code, in)
}

// test is the instruction of a condition or a comparison, specialised where the
// argument's kind is known.
func (g *generator) test(n *node) ins {
	if n.kind == nLit {
		return ins{op: fprobe.PredConst, mask: uint8(n.lit.bits)}
	}
	if n.kind == nArg {
		return ins{op: fprobe.PredBool, x: n.arg, mask: eq}
	}
	mask := cmpOps[n.op].mask
	x, y := n.l, n.r
	if x.kind == nLit && y.kind == nLit {
		o, _ := compare(x.lit, y.lit)
		return ins{op: fprobe.PredConst, mask: mask & o}
	}
	if x.kind == nLit { // the argument first
		x, y = y, x
		mask = mask&^(lt|gt) | flip(mask&lt) | flip(mask&gt)
	}
	if y.kind == nArg {
		return ins{op: fprobe.PredArgs, mask: mask, x: x.arg, y: y.arg}
	}
	l := y.lit
	in := ins{op: fprobe.PredAny, mask: mask, x: x.arg, lk: l.kind, k: l.bits, s: l.s}
	switch k := g.args[x.arg].Kind; {
	case k == registry.Int && l.kind == registry.Int:
		in.op = fprobe.PredInt
	case k == registry.Uint && (l.kind == registry.Uint || int64(l.bits) >= 0):
		in.op = fprobe.PredUint
	case k == registry.String && (mask == eq || mask == lt|gt|unordered):
		in.op = fprobe.PredStrEq
		in.mask = mask &^ unordered
	case k == registry.String:
		in.op = fprobe.PredStr
	}
	return in
}
