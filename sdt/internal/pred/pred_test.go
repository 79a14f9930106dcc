package pred

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// A probe with one argument of every kind: n int, path string, u uint, ok bool,
// f float64, x of a named type (fbt: its fires tell its kind).
var probe = []Arg{
	{"n", registry.Int}, {"path", registry.String}, {"u", registry.Uint},
	{"ok", registry.Bool}, {"f", registry.Float}, {"x", registry.Unknown},
}

type val struct {
	k registry.Kind
	b uint64
	s string
}

func I(v int64) val   { return val{registry.Int, uint64(v), ""} }
func U(v uint64) val  { return val{registry.Uint, v, ""} }
func F(v float64) val { return val{registry.Float, math.Float64bits(v), ""} }
func S(v string) val  { return val{registry.String, 0, v} }
func B(v bool) val {
	if v {
		return val{registry.Bool, 1, ""}
	}
	return val{registry.Bool, 0, ""}
}

func fire(vs ...val) *registry.Args {
	a := &registry.Args{N: len(vs)}
	for i, v := range vs {
		a.Kinds[i], a.Slots[i], a.Strs[i] = v.k, v.b, v.s
	}
	return a
}

// base is a fire of probe; with replaces some of its arguments.
func base(with map[int]val) *registry.Args {
	vs := []val{I(0), S(""), U(0), B(false), F(0), I(0)}
	for i, v := range with {
		vs[i] = v
	}
	return fire(vs...)
}

func mustCompile(t testing.TB, src string, args []Arg) *Program {
	t.Helper()
	p, err := Compile(src, args)
	if err != nil {
		t.Fatalf("Compile(%q): %v\n%s", src, err, err.(*Error).Caret())
	}
	return p
}

func TestMatch(t *testing.T) {
	long := strings.Repeat("a", 64) + "/api" // past what a copied record keeps
	for _, c := range []struct {
		expr string
		with map[int]val
		want bool
	}{
		// Int against literals.
		{"n == 5", map[int]val{0: I(5)}, true},
		{"n == 5", map[int]val{0: I(6)}, false},
		{"n != 5", map[int]val{0: I(6)}, true},
		{"n != 5", map[int]val{0: I(5)}, false},
		{"n < 5", map[int]val{0: I(4)}, true},
		{"n < 5", map[int]val{0: I(5)}, false},
		{"n <= 5", map[int]val{0: I(5)}, true},
		{"n <= 5", map[int]val{0: I(6)}, false},
		{"n > 5", map[int]val{0: I(6)}, true},
		{"n > 5", map[int]val{0: I(5)}, false},
		{"n >= 5", map[int]val{0: I(5)}, true},
		{"n >= 5", map[int]val{0: I(4)}, false},
		{"n < -1", map[int]val{0: I(-2)}, true},
		{"n == -9223372036854775808", map[int]val{0: I(math.MinInt64)}, true},
		{"n <= -9223372036854775808", map[int]val{0: I(math.MinInt64)}, true},
		{"n < -9223372036854775808", map[int]val{0: I(math.MinInt64)}, false},
		{"n == 0x7fffffffffffffff", map[int]val{0: I(math.MaxInt64)}, true},
		{"n < 18446744073709551615", map[int]val{0: I(math.MaxInt64)}, true},
		{"n != 18446744073709551615", map[int]val{0: I(-1)}, true},
		{"n == 18446744073709551615", map[int]val{0: I(-1)}, false}, // same bits, not the same number
		{"n > 0", map[int]val{0: I(math.MinInt64)}, false},
		// Literal first: the same comparison, turned around.
		{"5 < n", map[int]val{0: I(6)}, true},
		{"5 < n", map[int]val{0: I(5)}, false},
		{"5 >= n", map[int]val{0: I(5)}, true},
		{"-1 > n", map[int]val{0: I(math.MinInt64)}, true},
		// Uint: unsigned, and negative literals per mathematics.
		{"u == 18446744073709551615", map[int]val{2: U(math.MaxUint64)}, true},
		{"u > 9223372036854775807", map[int]val{2: U(math.MaxUint64)}, true},
		{"u > 0", map[int]val{2: U(math.MaxUint64)}, true},
		{"u < 10", map[int]val{2: U(math.MaxUint64)}, false},
		{"u == -1", map[int]val{2: U(math.MaxUint64)}, false},
		{"u != -1", map[int]val{2: U(math.MaxUint64)}, true},
		{"u > -1", map[int]val{2: U(0)}, true},
		{"u < -1", map[int]val{2: U(0)}, false},
		{"u >= -9223372036854775808", map[int]val{2: U(0)}, true},
		{"u <= 0", map[int]val{2: U(0)}, true},
		// Int against Uint, argument against argument.
		{"n < u", map[int]val{0: I(-1), 2: U(0)}, true},
		{"n == u", map[int]val{0: I(-1), 2: U(math.MaxUint64)}, false},
		{"n == u", map[int]val{0: I(7), 2: U(7)}, true},
		{"u > n", map[int]val{0: I(math.MinInt64), 2: U(0)}, true},
		{"n >= n", nil, true},
		{"path == path", map[int]val{1: S("x")}, true},
		{"ok == ok", nil, true},
		{"n == f", map[int]val{0: I(3), 4: F(3)}, true},
		// Float against integers, exactly.
		{"f == 3", map[int]val{4: F(3)}, true},
		{"f > 3", map[int]val{4: F(3.5)}, true},
		{"f < 4", map[int]val{4: F(3.5)}, true},
		{"f < -3", map[int]val{4: F(-3.5)}, true},
		{"f > -4", map[int]val{4: F(-3.5)}, true},
		{"f == 9007199254740993", map[int]val{4: F(9007199254740992)}, false}, // 2^53+1 rounds to 2^53 as a float64
		{"f < 9007199254740993", map[int]val{4: F(9007199254740992)}, true},
		{"f == 9223372036854775807", map[int]val{4: F(1 << 63)}, false},
		{"f > 9223372036854775807", map[int]val{4: F(1 << 63)}, true},
		{"f == 18446744073709551615", map[int]val{4: F(1 << 64)}, false},
		{"f > 18446744073709551615", map[int]val{4: F(1 << 64)}, true},
		{"f < 18446744073709551615", map[int]val{4: F(1 << 63)}, true},
		{"f == 9223372036854775808", map[int]val{4: F(1 << 63)}, true},
		{"f < -9223372036854775808", map[int]val{4: F(math.Inf(-1))}, true},
		{"f > 18446744073709551615", map[int]val{4: F(math.Inf(1))}, true},
		{"f == 0", map[int]val{4: F(math.NaN())}, false},
		{"f < 0", map[int]val{4: F(math.NaN())}, false},
		{"f >= 0", map[int]val{4: F(math.NaN())}, false},
		{"f != 0", map[int]val{4: F(math.NaN())}, true},
		{"f == f", map[int]val{4: F(math.NaN())}, false},
		{"f != f", map[int]val{4: F(math.NaN())}, true},
		{"f == 0", map[int]val{4: F(math.Copysign(0, -1))}, true},
		// Strings: bytes, the fire's whole string, empty ones.
		{`path == "/api"`, map[int]val{1: S("/api")}, true},
		{`path == "/api"`, map[int]val{1: S("/ap")}, false},
		{`path != "/api"`, map[int]val{1: S("/apj")}, true},
		{`path != "/api"`, map[int]val{1: S("/api")}, false},
		{`path < "b"`, map[int]val{1: S("a")}, true},
		{`path < "b"`, map[int]val{1: S("b")}, false},
		{`path <= "b"`, map[int]val{1: S("b")}, true},
		{`path > "b"`, map[int]val{1: S("ba")}, true},
		{`path >= "b"`, map[int]val{1: S("a")}, false},
		{`path > "a"`, map[int]val{1: S("\xff")}, true}, // bytes, not runes
		{`path == ""`, map[int]val{1: S("")}, true},
		{`path == ""`, map[int]val{1: S("x")}, false},
		{`path > ""`, map[int]val{1: S("x")}, true},
		{`path < ""`, map[int]val{1: S("")}, false},
		{`path == "` + long + `"`, map[int]val{1: S(long)}, true},
		{`path == "` + long[:64] + `"`, map[int]val{1: S(long)}, false},
		{`path > "` + long[:64] + `"`, map[int]val{1: S(long)}, true},
		{`path == "a\"b\\c\nd\te"`, map[int]val{1: S("a\"b\\c\nd\te")}, true},
		{`"b" > path`, map[int]val{1: S("a")}, true},
		// Bools.
		{"ok", map[int]val{3: B(true)}, true},
		{"ok", map[int]val{3: B(false)}, false},
		{"!ok", map[int]val{3: B(false)}, true},
		{"ok == true", map[int]val{3: B(true)}, true},
		{"ok != true", map[int]val{3: B(true)}, false},
		{"false == ok", map[int]val{3: B(false)}, true},
		{"true", nil, true},
		{"false", nil, false},
		{"!false", nil, true},
		// Literals against literals fold.
		{"1 < 2", nil, true},
		{"-1 < 18446744073709551615", nil, true},
		{`"a" == "a"`, nil, true},
		{"true != false", nil, true},
		// Logic and precedence: && binds tighter than ||, ! tighter than both.
		{`n > 100 && path == "/api"`, map[int]val{0: I(101), 1: S("/api")}, true},
		{`n > 100 && path == "/api"`, map[int]val{0: I(100), 1: S("/api")}, false},
		{`n > 100 && path == "/api"`, map[int]val{0: I(101), 1: S("/")}, false},
		{`n > 100 || path == "/api"`, map[int]val{0: I(0), 1: S("/api")}, true},
		{`n > 100 || path == "/api"`, map[int]val{0: I(0), 1: S("/")}, false},
		{"true || false && false", nil, true},
		{"(true || false) && false", nil, false},
		{"!true || true", nil, true},
		{"!(true || true)", nil, false},
		{"!!ok", map[int]val{3: B(true)}, true},
		{"!(n == 1) && !(n == 2)", map[int]val{0: I(3)}, true},
		{"!(n == 1 || n == 2)", map[int]val{0: I(2)}, false},
		{"(((n == 1)))", map[int]val{0: I(1)}, true},
		{"n == 1 || n == 2 || n == 3 || n == 4", map[int]val{0: I(4)}, true},
		{"n > 0 && n < 10 && n != 5", map[int]val{0: I(5)}, false},
		// argN and names are the same argument.
		{"arg0 == 5 && n == 5", map[int]val{0: I(5)}, true},
		{`arg1 == "/api"`, map[int]val{1: S("/api")}, true},
		// An fbt argument: its fire tells its kind.
		{"x == 5", map[int]val{5: I(5)}, true},
		{"x == -1", map[int]val{5: U(math.MaxUint64)}, false},
		{"x > 5", map[int]val{5: F(5.5)}, true},
		{`x == "a"`, map[int]val{5: S("a")}, true},
		{"x", map[int]val{5: B(true)}, true},
		{"x == n", map[int]val{0: I(2), 5: U(2)}, true},
		// ...and one of the wrong kind does not match, whatever the operators.
		{`x == "a"`, map[int]val{5: I(5)}, false},
		{`x != "a"`, map[int]val{5: I(5)}, false},
		{`!(x == "a")`, map[int]val{5: I(5)}, false},
		{"x", map[int]val{5: I(1)}, false},
		{"!x", map[int]val{5: I(1)}, false},
		{"x == true", map[int]val{5: I(1)}, false},
		{"x == path", map[int]val{5: I(1)}, false},
		// ...unless || already decided.
		{`n == 0 || x == "a"`, map[int]val{5: I(5)}, true},
	} {
		p := mustCompile(t, c.expr, probe)
		if got := p.Match(base(c.with)); got != c.want {
			t.Errorf("%q on %v: %v, want %v (program %+v)", c.expr, c.with, got, c.want, p.code)
		}
	}
}

// A fire of another probe than the program's (a wrong kind where the program trusts
// the probe's) does not match, and does not crash.
func TestMatchOtherProbe(t *testing.T) {
	for _, expr := range []string{"n == 0", "u == 0", `path == ""`, `path < "a"`, "ok", "n < u", "f == 0"} {
		p := mustCompile(t, expr, probe)
		a := fire(S(""), I(0), S(""), I(0), S(""), S(""))
		if p.Match(a) {
			t.Errorf("%q matched a fire of other kinds", expr)
		}
		if p.Match(&registry.Args{}) {
			t.Errorf("%q matched a fire with no arguments", expr)
		}
	}
}

func TestNilProgram(t *testing.T) {
	var p *Program
	if !p.Match(base(nil)) || p.String() != "" {
		t.Fatal("a nil program should match every fire")
	}
}

// && and || stop at the first operand that decides: a later one of the wrong kind
// (which would make the fire not match) is never looked at.
func TestShortCircuit(t *testing.T) {
	for _, c := range []struct {
		expr string
		want bool
	}{
		{`n == 1 && x == "a"`, false}, // n is 0: x is not looked at
		{`n == 0 || x == "a"`, true},
		{`!(n == 0) && x`, false},
		{`(n == 0 || x) && n == 0`, true},
		{`n == 1 && x || n == 0`, true},
		{`n == 0 && x`, false}, // here x is looked at, and is an int
	} {
		p := mustCompile(t, c.expr, probe)
		if got := p.Match(base(map[int]val{5: I(9)})); got != c.want {
			t.Errorf("%q: %v, want %v", c.expr, got, c.want)
		}
	}
	// The program itself: a && b's first test rejects without reaching the second.
	p := mustCompile(t, `n > 100 && path == "/api"`, probe)
	if len(p.code) != 2 || p.code[0].f != int32(len(p.code)+1) {
		t.Errorf("n > 100 && ...: the first test does not reject at once: %+v", p.code)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		expr string
		pos  int
		msg  string
	}{
		{"", 0, "empty expression"},
		{"   ", 3, "empty expression"},
		{strings.Repeat(" ", MaxLen) + "n", MaxLen, "longer than 1024 bytes"},
		{strings.Repeat("(", MaxDepth+1) + "ok" + strings.Repeat(")", MaxDepth+1), MaxDepth, "nested deeper than 64"},
		{strings.Repeat("!", MaxDepth+1) + "ok", MaxDepth, "nested deeper than 64"},
		{"(n == 1", 0, "unbalanced (: no ) closes it"},
		{"((n == 1) && ok", 0, "unbalanced ("},
		{"n == 1)", 6, "unbalanced ): no ( to close"},
		{"(n == 1 path)", 8, `expected ) or an operator, found "path"`},
		{"()", 1, `found ")"`},
		{"n == 1 ok", 7, `unexpected "ok" after a complete expression`},
		{`n == 1 "x"`, 7, `unexpected string "x" after`},
		{"n == 1 &&", 9, "found end of expression"},
		{"&& ok", 0, `found "&&"`},
		{"n ==", 4, "found end of expression"},
		{"nn == 1", 0, `unknown argument "nn": this probe has arg0 (n), arg1 (path), arg2 (u), arg3 (ok), arg4 (f), arg5 (x)`},
		{"n == 1 && arg6 == 1", 10, `unknown argument "arg6"`},
		{"arg9 == 1", 0, `unknown argument "arg9"`},
		{`n == "a"`, 5, "cannot compare a number with a string"},
		{`"a" == n`, 7, "cannot compare a string with a number"},
		{`n > 1 && path < 5`, 16, "cannot compare a string with a number"},
		{"ok == 1", 6, "cannot compare a bool with a number"},
		{"u == true", 5, "cannot compare a number with a bool"},
		{"ok < true", 3, "bools are compared only with == and !="},
		{"x < true", 2, "bools are compared only with == and !="},
		{"n", 0, "a number is not a condition: compare it"},
		{"ok && path", 6, "a string is not a condition"},
		{"!5", 1, "a number is not a condition"},
		{"(n == 1) == true", 0, "== compares arguments and literals, not conditions"},
		{"ok == !ok", 6, "not conditions"},
		{"n < 1 < 2", 6, "comparisons do not chain"},
		{"n = 1", 2, "unexpected character '=': == compares"},
		{"ok & ok", 3, "&& and || join conditions"},
		{"ok | ok", 3, "&& and || join conditions"},
		{"n == 1 # x", 7, "unexpected character '#'"},
		{"n == é", 5, "unexpected byte 0xc3"},
		{"n - 1", 2, "unexpected character '-'"},
		{"n == -x", 5, "unexpected character '-'"},
		{"n == 18446744073709551616", 5, "integer 18446744073709551616 out of range"},
		{"n == -9223372036854775809", 5, "integer -9223372036854775809 out of range"},
		{"n == 0x", 5, `malformed integer "0x"`},
		{"n == 12ab", 5, `malformed integer "12ab"`},
		{"n == 0xfg", 5, `malformed integer "0xfg"`},
		{"n == 012", 5, "leading zero"},
		{`path == "abc`, 8, "unterminated string"},
		{`path == "abc\`, 8, "unterminated string"},
		{`path == "a\x"`, 10, `unknown escape \x`},
	} {
		_, err := Compile(c.expr, probe)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("%q: error %v (%T), want *Error", c.expr, err, err)
			continue
		}
		if e.Pos != c.pos || !strings.Contains(e.Msg, c.msg) || e.Expr != c.expr {
			t.Errorf("%q: pos %d %q, want pos %d containing %q", c.expr, e.Pos, e.Msg, c.pos, c.msg)
		}
	}
	if _, err := Compile("arg0 == 1", nil); err == nil || !strings.Contains(err.Error(), "this probe has no arguments") {
		t.Errorf("no arguments: %v", err)
	}
	if _, err := Compile("arg0 == 1", make([]Arg, registry.MaxArgs+1)); err == nil {
		t.Error("7 arguments compiled")
	}
}

func TestErrorText(t *testing.T) {
	_, err := Compile(`arg0 > 100 && arg1 == 100`, probe)
	if got, want := err.Error(), "where: col 23: cannot compare a string with a number"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := err.(*Error).Caret(), "arg0 > 100 && arg1 == 100\n                      ^"; got != want {
		t.Errorf("Caret() =\n%s\nwant\n%s", got, want)
	}
	// The caret counts characters, and the expression stays on one line.
	e := &Error{Expr: "\"é\"\t== n\n", Pos: 8}
	if got, want := e.Caret(), "\"é\" == n \n       ^"; got != want {
		t.Errorf("Caret() =\n%q\nwant\n%q", got, want)
	}
	e = &Error{Expr: "ab", Pos: 99}
	if got, want := e.Caret(), "ab\n  ^"; got != want {
		t.Errorf("Caret past the end = %q, want %q", got, want)
	}
}

func TestString(t *testing.T) {
	named := []Arg{{"n", registry.Int}, {"arg0", registry.Int}, {"true", registry.Bool}, {"a-b", registry.Int}, {"n", registry.Int}, {"", registry.String}}
	for _, c := range []struct{ in, want string }{
		{"n>100&&(path==\"/api\")", `n > 100 && path == "/api"`},
		{"arg0 == 0x10", "n == 16"},
		{"ok || ok && ok", "ok || ok && ok"},
		{"(ok || ok) && ok", "(ok || ok) && ok"},
		{"ok && (ok && ok)", "ok && (ok && ok)"},
		{"(ok && ok) && ok", "ok && ok && ok"},
		{"ok || (ok || ok)", "ok || (ok || ok)"},
		{"ok || (ok && ok)", "ok || ok && ok"},
		{"!(n == 1)", "!(n == 1)"},
		{"!(ok)", "!ok"},
		{"!!(ok && ok)", "!!(ok && ok)"},
		{`path == "a\"\\\n\t` + "\x01\xff" + `"`, `path == "a\"\\\n\t` + "\x01\xff" + `"`},
		{"-0 == 0", "0 == 0"},
		{"18446744073709551615 > -9223372036854775808", "18446744073709551615 > -9223372036854775808"},
	} {
		if got := mustCompile(t, c.in, probe).String(); got != c.want {
			t.Errorf("String of %q = %q, want %q", c.in, got, c.want)
		}
	}
	// Names that would not resolve back print as argN.
	p := mustCompile(t, "arg1 == 1 && arg4 == 2 && arg3 == 3 && arg2 && n == 0 && arg5 == \"\"", named)
	if got, want := p.String(), `arg1 == 1 && arg4 == 2 && arg3 == 3 && arg2 && n == 0 && arg5 == ""`; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func Example() {
	args := []Arg{{"n", registry.Int}, {"path", registry.String}}
	p, err := Compile(`arg0 > 100 && path == "/api"`, args)
	if err != nil {
		panic(err)
	}
	fire := &registry.Args{N: 2, Kinds: registry.Kinds{registry.Int, registry.String}, Slots: [registry.MaxArgs]uint64{150}, Strs: [registry.MaxArgs]string{1: "/api"}}
	fmt.Println(p, p.Match(fire))

	_, err = Compile(`n > 100 && path == 100`, args)
	fmt.Println(err)
	fmt.Println(err.(*Error).Caret())
	// Output:
	// n > 100 && path == "/api" true
	// where: col 20: cannot compare a string with a number
	// n > 100 && path == 100
	//                    ^
}

func TestAllocs(t *testing.T) {
	for _, expr := range []string{`n > 100 && path == "/api"`, `path < "b" || u > -1 || f != 3 || x == "a" || n < u || !ok`} {
		p := mustCompile(t, expr, probe)
		a := base(map[int]val{0: I(101), 1: S("/api"), 5: S("a")})
		if n := testing.AllocsPerRun(1000, func() { p.Match(a) }); n != 0 {
			t.Errorf("%q: %v allocations per Match", expr, n)
		}
	}
}

// TestNumbers checks every comparison of numbers of every kind against exact
// rational arithmetic, over values at the edges of each kind.
func TestNumbers(t *testing.T) {
	var vals []val
	for _, v := range []int64{math.MinInt64, math.MinInt64 + 1, -1 << 53, -3, -1, 0, 1, 2, 3, 1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64} {
		vals = append(vals, I(v))
	}
	for _, v := range []uint64{0, 1, 3, 1 << 53, math.MaxInt64, 1 << 63, 1<<63 + 1, math.MaxUint64 - 1, math.MaxUint64} {
		vals = append(vals, U(v))
	}
	for _, v := range []float64{math.Inf(-1), -1 << 64, -1 << 63, -3.5, -3, -1, -0.5, 0, 0.5, 1, 2.5, 3, 1 << 53, 1 << 63, 1 << 64, math.MaxFloat64, math.Inf(1), math.NaN()} {
		vals = append(vals, F(v))
	}
	for _, x := range vals {
		for _, y := range vals {
			checkNumbers(t, x, y)
		}
	}
}

func checkNumbers(t testing.TB, x, y val) {
	t.Helper()
	want, ordered := ratCompare(x, y)
	got, ok := compare(value{x.k, x.b, ""}, value{y.k, y.b, ""})
	wantO := unordered
	if ordered {
		wantO = lt << (want + 1)
	}
	if !ok || got != wantO {
		t.Fatalf("compare(%v, %v) = %v %v, want %v", show(x), show(y), got, ok, wantO)
	}
	// Through a program, with y as a literal where the language has one.
	args := []Arg{{"x", x.k}, {"y", y.k}}
	for i, op := range cmpOps {
		for _, expr := range []string{"x " + op.text + " y", "y " + flipText(i) + " x"} {
			p := mustCompile(t, expr, args)
			if got := p.Match(fire(x, y)); got != (op.mask&wantO != 0) {
				t.Fatalf("%s with x=%v y=%v: %v", expr, show(x), show(y), got)
			}
		}
		if y.k != registry.Float {
			expr := "x " + op.text + " " + show(y)
			for _, ak := range []registry.Kind{x.k, registry.Unknown} {
				p := mustCompile(t, expr, []Arg{{"x", ak}})
				if got := p.Match(fire(x)); got != (op.mask&wantO != 0) {
					t.Fatalf("%s with x=%v (compiled as kind %v): %v", expr, show(x), ak, got)
				}
			}
		}
	}
}

func flipText(i int) string {
	return [...]string{"==", "!=", ">", ">=", "<", "<="}[i]
}

func show(v val) string {
	switch v.k {
	case registry.Int:
		return big.NewInt(int64(v.b)).String()
	case registry.Uint:
		return new(big.Int).SetUint64(v.b).String()
	}
	return big.NewFloat(math.Float64frombits(v.b)).String()
}

func rat(v val) (*big.Rat, int, bool) {
	switch v.k {
	case registry.Int:
		return new(big.Rat).SetInt64(int64(v.b)), 0, true
	case registry.Uint:
		return new(big.Rat).SetInt(new(big.Int).SetUint64(v.b)), 0, true
	}
	f := math.Float64frombits(v.b)
	switch {
	case math.IsNaN(f):
		return nil, 0, false
	case math.IsInf(f, 0):
		return nil, int(math.Copysign(1, f)), true
	}
	return new(big.Rat).SetFloat64(f), 0, true
}

func ratCompare(x, y val) (int, bool) {
	rx, ix, okx := rat(x)
	ry, iy, oky := rat(y)
	switch {
	case !okx || !oky:
		return 0, false
	case ix != 0 || iy != 0:
		switch {
		case ix < iy:
			return -1, true
		case ix > iy:
			return 1, true
		}
		if ix != 0 { // both infinite, same sign
			return 0, true
		}
		return 0, true
	}
	return rx.Cmp(ry), true
}

func BenchmarkMatch(b *testing.B) {
	args := []Arg{{"n", registry.Int}, {"path", registry.String}}
	for _, c := range []struct {
		name, expr string
		a          *registry.Args
	}{
		{"int&&str/true", `arg0 > 100 && arg1 == "/api"`, fire(I(150), S("/api"))},
		{"int&&str/false", `arg0 > 100 && arg1 == "/api"`, fire(I(50), S("/api"))},
		{"or4", `arg0 == 1 || arg0 == 2 || arg0 == 3 || arg1 < "/"`, fire(I(50), S("/api"))},
	} {
		p := mustCompile(b, c.expr, args)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				p.Match(c.a)
			}
		})
	}
	unknown := []Arg{{"n", registry.Unknown}, {"path", registry.Unknown}}
	p := mustCompile(b, `arg0 > 100 && arg1 == "/api"`, unknown)
	b.Run("int&&str/unknown-kinds", func(b *testing.B) {
		a := fire(I(150), S("/api"))
		for b.Loop() {
			p.Match(a)
		}
	})
}

// TestCheck: what no probe could take is refused before any probe is known, and
// what some probe could is not, whatever names it uses.
func TestCheck(t *testing.T) {
	for _, src := range []string{
		`i > 5`, `nosuch == "x" && arg5 > 1`, `ok`, `!(a < b) || c != 0x10`, `arg0 == arg1`, `x == true`,
	} {
		if err := Check(src); err != nil {
			t.Errorf("Check(%q): %v", src, err)
		}
	}
	for src, want := range map[string]string{
		`i >`:       "expected an argument, a literal",
		`(i > 1`:    "unbalanced (",
		`i > 1 1`:   "after a complete expression",
		`1 == "x"`:  "cannot compare",
		`i && 3`:    "not a condition",
		`i < j < k`: "do not chain",
		``:          "empty expression",
		`true < x`:  "bools are compared only with == and !=",
	} {
		err := Check(src)
		if e, ok := err.(*Error); !ok || !strings.Contains(e.Msg, want) {
			t.Errorf("Check(%q) = %v, want an *Error saying %q", src, err, want)
		}
	}
}
