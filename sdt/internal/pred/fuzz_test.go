package pred

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// FuzzCompile: Compile never panics, its errors point inside the expression, and a
// program's String compiles to the same program.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`arg0 > 100 && arg1 == "/api"`, `!(n == 1 || ok) && path < "a\"\n"`, "x == -9223372036854775808",
		"u != 0xffffffffffffffff", "((ok))", "f >= 3 || x", "true", "", "(", `"`, "n = 1", "n == 012",
	} {
		f.Add(s)
	}
	fires := []*registry.Args{
		base(nil),
		base(map[int]val{0: I(101), 1: S("/api"), 2: U(math.MaxUint64), 3: B(true), 4: F(math.NaN()), 5: S("a")}),
		fire(S("a"), I(1)),
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src, probe)
		if cerr := Check(src); err == nil && cerr != nil {
			t.Fatalf("%q compiles for a probe, yet Check refuses it: %v", src, cerr)
		} else if e, ok := cerr.(*Error); cerr != nil && (!ok || e.Pos < 0 || e.Pos > len(src) || e.Expr != src || e.Msg == "") {
			t.Fatalf("%q: bad error from Check %#v", src, cerr)
		}
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Pos < 0 || e.Pos > len(src) || e.Expr != src || e.Msg == "" {
				t.Fatalf("%q: bad error %#v", src, err)
			}
			if strings.ContainsFunc(e.Error(), func(r rune) bool { return r < ' ' || r == 0x7f }) {
				t.Fatalf("%q: Error is not one printable line: %q", src, e.Error())
			}
			if c := e.Caret(); strings.Count(c, "\n") != 1 {
				t.Fatalf("%q: Caret is not two lines: %q", src, c)
			}
			return
		}
		q, err := Compile(p.String(), probe)
		if err != nil {
			t.Fatalf("%q: String %q does not compile: %v", src, p.String(), err)
		}
		if !reflect.DeepEqual(p.code, q.code) || p.need != q.need || q.String() != p.String() {
			t.Fatalf("%q: String %q compiles to another program:\n%+v\n%+v", src, p.String(), p.code, q.code)
		}
		for _, a := range fires {
			if p.Match(a) != q.Match(a) {
				t.Fatalf("%q and %q disagree on %+v", src, p.String(), a)
			}
		}
	})
}

// FuzzMatch: any comparison of two values of any kinds, argument against argument
// and against a literal, compiled for the fire's kinds or for kinds only fires tell,
// agrees with exact arithmetic (numbers) and byte order (strings).
func FuzzMatch(f *testing.F) {
	f.Add(uint8(2), uint8(0), uint64(1<<63), uint8(1), uint64(5), "", "")
	f.Add(uint8(0), uint8(2), math.Float64bits(3.5), uint8(0), uint64(3), "", "")
	f.Add(uint8(3), uint8(3), uint64(0), uint8(3), uint64(0), "/api", strings.Repeat("x", 100))
	kinds := []registry.Kind{registry.Int, registry.Uint, registry.Float, registry.String}
	f.Fuzz(func(t *testing.T, op, kx uint8, bx uint64, ky uint8, by uint64, sx, sy string) {
		x := val{kinds[int(kx)%len(kinds)], bx, sx}
		y := val{kinds[int(ky)%len(kinds)], by, sy}
		if x.k == registry.String {
			x.b = 0
		} else {
			x.s = ""
		}
		if y.k == registry.String {
			y.b = 0
		} else {
			y.s = ""
		}
		o := cmpOps[int(op)%len(cmpOps)]
		var want bool
		switch xs, ys := x.k == registry.String, y.k == registry.String; {
		case xs && ys:
			want = o.mask&(lt<<(strings.Compare(x.s, y.s)+1)) != 0
		case xs || ys:
			want = false // a fire of the wrong kind does not match
		default:
			c, ordered := ratCompare(x, y)
			want = o.mask&unordered != 0
			if ordered {
				want = o.mask&(lt<<(c+1)) != 0
			}
		}
		for _, unknown := range []bool{false, true} {
			args := []Arg{{"x", x.k}, {"y", y.k}}
			if unknown || (x.k == registry.String) != (y.k == registry.String) {
				args = []Arg{{"x", registry.Unknown}, {"y", registry.Unknown}}
			}
			p := mustCompile(t, "x "+o.text+" y", args)
			if got := p.Match(fire(x, y)); got != want {
				t.Fatalf("%s with x=%+v y=%+v: %v, want %v", p, x, y, got, want)
			}
			lit := quote(y.s)
			if y.k != registry.String {
				lit = show(y)
			}
			src := "x " + o.text + " " + lit
			if y.k == registry.Float || len(src) > MaxLen { // there are no float literals, and source has a cap
				continue
			}
			p = mustCompile(t, src, args[:1])
			if got := p.Match(fire(x)); got != want {
				t.Fatalf("%s with x=%+v: %v, want %v", p, x, got, want)
			}
		}
	})
}
