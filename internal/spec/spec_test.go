package spec

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Spec
	}{
		// Fill from the right.
		{"exit", Spec{Name: "exit"}},
		{"worker:exit", Spec{Function: "worker", Name: "exit"}},
		{"main:worker:exit", Spec{Module: "main", Function: "worker", Name: "exit"}},
		{"proc:main:worker:exit", Spec{"proc", "main", "worker", "exit"}},
		{"proc:::exit", Spec{Provider: "proc", Name: "exit"}},
		{":::", Spec{}},
		{"::", Spec{}},
		{":", Spec{}},
		{"proc:::", Spec{Provider: "proc"}},
		{"::main.worker:", Spec{Function: "main.worker"}},
		// Go names.
		{"gosdt:github.com/x/y:y.(*T).Method:entry", Spec{"gosdt", "github.com/x/y", "y.(*T).Method", "entry"}},
		{`github.com/x/y:y.(\*T).M:return`, Spec{Module: "github.com/x/y", Function: `y.(\*T).M`, Name: "return"}},
		{"y:y.F[...]:entry", Spec{Module: "y", Function: "y.F[...]", Name: "entry"}},
		// Globs are kept as written.
		{"p*:github.com/*:main.w?rker:[a-e]x[!x]t", Spec{"p*", "github.com/*", "main.w?rker", "[a-e]x[!x]t"}},
		// ':' inside a class or escaped does not split.
		{"a[:]b:c", Spec{Function: "a[:]b", Name: "c"}},
		{`a\:b:c`, Spec{Function: `a\:b`, Name: "c"}},
		{`a:b:c:d\:e`, Spec{"a", "b", "c", `d\:e`}},
		{`[\]\-\\]`, Spec{Name: `[\]\-\\]`}},
		{"é:ü*", Spec{Function: "é", Name: "ü*"}},
		// Limits are inclusive.
		{strings.Repeat("a", 256), Spec{Name: strings.Repeat("a", 256)}},
		{strings.Repeat("a", 256) + ":" + strings.Repeat("b", 256) + ":" + strings.Repeat("c", 256) + ":" + strings.Repeat("d", 253),
			Spec{strings.Repeat("a", 256), strings.Repeat("b", 256), strings.Repeat("c", 256), strings.Repeat("d", 253)}},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): unexpected error %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
		again, err := Parse(got.String())
		if err != nil || again != got {
			t.Errorf("Parse(%q) = %#v, %v; want %#v", got.String(), again, err, got)
		}
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("a", 257)
	tests := []struct {
		in, reason string
	}{
		{"", "empty spec"},
		{"a:b:c:d:e", "more than 4 fields"},
		{"::::", "more than 4 fields"},
		{"proc:::exit:", "more than 4 fields"},
		{"a b", "whitespace ' ' at byte 1"},
		{"a\tb", `whitespace '\t' at byte 1`},
		{"exit\n", `whitespace '\n' at byte 4`},
		{"a\u00a0b", `whitespace '\u00a0' at byte 1`},
		{"a\x00b", `control character '\x00' at byte 1`},
		{"a\x7fb", `control character '\x7f' at byte 1`},
		{"a\x1bb", `control character '\x1b' at byte 1`},
		{"a\xffb", "invalid UTF-8"},
		{"a[bc", "unclosed '[' at byte 1"},
		{"a[bc:d", "unclosed '[' at byte 1"},
		{"[", "unclosed '[' at byte 0"},
		{"[!", "unclosed '[' at byte 0"},
		{`[a\`, "trailing '\\' at byte 0"},
		{"[a-", "unclosed '[' at byte 0"},
		{`exit\`, `trailing '\'`},
		{`a:b\`, `trailing '\'`},
		{"x[]y", "empty character class at byte 1"},
		{"x[!]y", "empty character class at byte 1"},
		{"x[-a]", `unescaped '-' in character class at byte 1`},
		{"x[a-]", `unescaped ']' in character class at byte 1`},
		{"x[z-a]", `reversed range "z-a" in character class at byte 1`},
		{long, "name field longer than 256 bytes"},
		{long + ":", "function field longer than 256 bytes"},
		{long + "::", "module field longer than 256 bytes"},
		{long + ":::", "provider field longer than 256 bytes"},
		{"p:" + long + "::n", "module field longer than 256 bytes"},
		{strings.Repeat("a:", 600), "longer than 1024 bytes"},
		{strings.Repeat("a", 1025), "longer than 1024 bytes"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %#v, want error %q", tt.in, got, tt.reason)
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q): error %v (%T) is not a *spec.Error", tt.in, err, err)
			continue
		}
		if e.Spec != tt.in || e.Reason != tt.reason {
			t.Errorf("Parse(%q): got Error{%q, %q}, want Error{%q, %q}", tt.in, e.Spec, e.Reason, tt.in, tt.reason)
		}
		if got != (Spec{}) {
			t.Errorf("Parse(%q) returned non-zero Spec %#v with error", tt.in, got)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := Parse("a:b:c:d:e")
	if want := `malformed probe spec "a:b:c:d:e": more than 4 fields`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	_, err = Parse("")
	if want := `malformed probe spec "": empty spec`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	// Very long specs are shortened in the message but kept in full in Spec.
	long := strings.Repeat("é", 600)
	_, err = Parse(long)
	var e *Error
	if !errors.As(err, &e) || e.Spec != long {
		t.Fatalf("got %v, want *Error with full spec", err)
	}
	msg := err.Error()
	if len(msg) > 200 || !strings.HasPrefix(msg, `malformed probe spec "ééé`) ||
		!strings.HasSuffix(msg, `...": longer than 1024 bytes`) {
		t.Errorf("message not shortened sensibly: %s", msg)
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		in   Spec
		want string
	}{
		{Spec{}, ":::"},
		{Spec{Name: "exit"}, ":::exit"},
		{Spec{Provider: "proc", Name: "exit"}, "proc:::exit"},
		{Spec{"gosdt", "github.com/x/y", "y.(*T).M", "entry"}, "gosdt:github.com/x/y:y.(*T).M:entry"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		// Empty pattern matches anything.
		{"", "", true},
		{"", "anything/at.all", true},
		// Literals match the whole string only.
		{"exit", "exit", true},
		{"exit", "exits", false},
		{"exit", "xexit", false},
		{"exit", "", false},
		{"main", "main", true},
		{"github.com/x/y", "github.com/x/y", true},
		{"github.com/x/y", "github.com/x/yz", false},
		// '*' spans '/' and '.', and may be empty.
		{"*", "", true},
		{"*", "github.com/x/y", true},
		{"github.com/*", "github.com/x/y", true},
		{"github.com/*", "github.com/", true},
		{"github.com/*", "github.com", false},
		{"*/y", "github.com/x/y", true},
		{"*.worker", "main.worker", true},
		{"main.*", "main.(*T).Run", true},
		{"*.(*T).*", "y.(*T).Method", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"a*b", "abab", true},
		{"a*b", "abac", false},
		{"**", "x", true},
		{"a**b", "ab", true},
		{"*x", "xxx", true},
		{"*xy", "xxxy", true},
		// '?' matches exactly one character (rune).
		{"?", "a", true},
		{"?", "", false},
		{"?", "ab", false},
		{"?", "é", true},
		{"??", "é", false},
		{"?", "/", true},
		{"main.w?rker", "main.worker", true},
		{"main.w?rker", "main.wrker", false},
		// Character classes.
		{"[abc]", "b", true},
		{"[abc]", "d", false},
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{"[!a-c]x", "dx", true},
		{"[!a-c]x", "ax", false},
		{"[^a-c]x", "dx", true},
		{"[^a-c]x", "cx", false},
		{"[a-cx-z0-9]", "y", true},
		{"[a-cx-z0-9]", "5", true},
		{"[a-cx-z0-9]", "m", false},
		{"[a-c]", "", false},
		{"[a-c]", "ab", false},
		{"[é-ü]", "ö", true},
		{"[!é]", "é", false},
		{"[!é]", "e", true},
		{"[*]", "*", true},
		{"[*]", "x", false},
		{"[?]", "?", true},
		{"[?]", "x", false},
		{"[[]", "[", true},
		{"[:]", ":", true},
		{"[!/]*", "/x", false},
		{"[!/]*", "x/", true},
		{`[\]]`, "]", true},
		{`[\-]`, "-", true},
		{`[\-]`, "a", false},
		{`[\\]`, `\`, true},
		{`[\!a]`, "!", true},
		{`[\!a]`, "b", false},
		{"[!!]", "!", false},
		{"[!!]", "a", true},
		{"v[0-9]*", "v10", true},
		// Escapes.
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`\?`, "?", true},
		{`\?`, "x", false},
		{`\[a]`, "[a]", true},
		{`\[a]`, "a", false},
		{`\\`, `\`, true},
		{`\a`, "a", true},
		{`\é`, "é", true},
		{`\:`, ":", true},
		{`y.(\*T).M`, "y.(*T).M", true},
		{`y.(\*T).M`, "y.(xT).M", false},
		{`*\*`, "a*", true},
		{`*\*`, "a", false},
		// A plain '*' in (*T) still matches the literal '*'.
		{"y.(*T).M", "y.(*T).M", true},
		{"*.(*T).M", "github.com/x/y.(*T).M", true},
		// Go generic instantiations: "[...]" matches itself literally.
		{"y.F[...]", "y.F[...]", true},
		{"y.F[...]", "y.F.", false},
		{"y.*[...]", "y.Map[...]", true},
		{"y.*[...].M", "y.(*List[...]).M", false},
		{"y.(*List[...]).*", "y.(*List[...]).Push", true},
		{"*[...]*", "y.(*List[...]).Push", true},
		{`y.F\[...]`, "y.F[...]", true},
		{"y.F[.]", "y.F.", true},
		// Malformed patterns match nothing.
		{"[", "[", false},
		{"[a", "a", false},
		{`\`, `\`, false},
		{`a\`, `a\`, false},
		{"[]", "[]", false},
		{"[z-a]", "m", false},
		{"*[", "x[", false},
		// Non-UTF-8 input is compared byte for byte.
		{"\xff", "\xff", true},
		{"\xff", "\xfe", false},
		{"?", "\xff", true},
		{"*\xfe", "a\xfe", true},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestSpecMatch(t *testing.T) {
	type probe struct{ provider, module, function, name string }
	p := probe{"gosdt", "github.com/x/y", "y.(*T).Method", "entry"}
	tests := []struct {
		spec string
		p    probe
		want bool
	}{
		{":::", p, true},
		{"entry", p, true},
		{"return", p, false},
		{"y.(*T).Method:entry", p, true},
		{"y.(*T).*:entry", p, true},
		{"Method:entry", p, true},
		{"(*T).Method:entry", p, true},
		{"(*T).*:entry", p, true},
		{"T.Method:entry", p, false},
		{"Meth:entry", p, false},
		{"x.(*T).Method:entry", p, false},
		{"Pop:entry", probe{"fbt", "m/store", "store.(*Stack[...]).Pop", "entry"}, true},
		{"(*Stack[...]).Pop:entry", probe{"fbt", "m/store", "store.(*Stack[...]).Pop", "entry"}, true},
		{"Handle:entry", probe{"fbt", "m/app", "app.Handle", "entry"}, true},
		// Generic functions and go1.27's generic methods by their name alone, and as
		// the runtime prints them.
		{"Sum:entry", probe{"fbt", "m/store", "store.Sum[...]", "entry"}, true},
		{"Su:entry", probe{"fbt", "m/store", "store.Sum[...]", "entry"}, false},
		{"Map:entry", probe{"fbt", "m/store", "store.(*Box).Map[...]", "entry"}, true},
		{"(*Box).Map[...]:entry", probe{"fbt", "m/store", "store.(*Box).Map[...]", "entry"}, true},
		{"Conv:entry", probe{"fbt", "m/store", "store.G[...].Conv[...]", "entry"}, true},
		{"G[...].Conv[...]:entry", probe{"fbt", "m/store", "store.G[...].Conv[...]", "entry"}, true},
		{"Conv:entry", probe{"fbt", "m/store", "store.G[...].Conv[...].func1", "entry"}, false},
		{"(*Box).Map[go.shape.string]:entry", probe{"fbt", "m/store", "store.(*Box).Map[go.shape.string]", "entry"}, true},
		{"store.(*Box).Map[go.shape.string]:entry", probe{"fbt", "m/store", "store.(*Box).Map[go.shape.string]", "entry"}, true},
		{"(*Box).Map[go.shape.int]:entry", probe{"fbt", "m/store", "store.(*Box).Map[go.shape.string]", "entry"}, false},
		{`(*Box).Map\[go.shape.*]:entry`, probe{"fbt", "m/store", "store.(*Box).Map[go.shape.string]", "entry"}, true},
		{"func1:entry", probe{"fbt", "m/store", "store.G[...].Conv[...].func1", "entry"}, true},
		{"app:entry", probe{"fbt", "m/app", "app.Handle", "entry"}, false},
		{"func1:entry", probe{"fbt", "m/app", "app.Handle.func1", "entry"}, true},
		{"Handle.func1:entry", probe{"fbt", "m/app", "app.Handle.func1", "entry"}, true},
		{"Handle:entry", probe{"fbt", "m/app", "app.Handle.func1", "entry"}, false},
		{"*.Method:entry", p, true},
		{"github.com/x/y::entry", p, true},
		{"github.com/*::", p, true},
		{"github.com/x::", p, false},
		{"gosdt:::", p, true},
		{"proc:::", p, false},
		{"gosdt:github.com/x/y:y.(*T).Method:entry", p, true},
		{"go*:*/y:*:e?try", p, true},
		{"main:worker:exit", probe{"gosdt", "main", "worker", "exit"}, true},
		{"main:worker:exit", probe{"gosdt", "main", "worker", "exits"}, false},
		{"main:worker:exit", probe{"gosdt", "main2", "worker", "exit"}, false},
		{"proc:::exit", probe{"proc", "anything", "at.all", "exit"}, true},
		{"proc:::exit", probe{"proc2", "anything", "at.all", "exit"}, false},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.spec, err)
		}
		if got := s.Match(tt.p.provider, tt.p.module, tt.p.function, tt.p.name); got != tt.want {
			t.Errorf("Parse(%q).Match(%+v) = %v, want %v", tt.spec, tt.p, got, tt.want)
		}
	}
}

// TestMatchNotExponential checks that patterns with many stars against a
// near-miss subject finish quickly.
func TestMatchNotExponential(t *testing.T) {
	pattern := strings.Repeat("a*", 100) + "b"
	s := strings.Repeat("a", 10000)
	if Match(pattern, s) {
		t.Fatal("unexpected match")
	}
	if !Match(pattern, s+"b") {
		t.Fatal("unexpected mismatch")
	}
}

func TestErrorPos(t *testing.T) {
	for _, tt := range []struct {
		in  string
		pos int
	}{
		{"", -1},
		{"a:b c", 3},
		{"a:b:c:d:e", 7},
		{`a\`, 1},
		{"a:[b", 2},
		{"ab\xff", 2},
	} {
		_, err := Parse(tt.in)
		var e *Error
		if !errors.As(err, &e) || e.Pos != tt.pos {
			t.Errorf("Parse(%q) = %v; want an error at %d", tt.in, err, tt.pos)
		}
	}
}
