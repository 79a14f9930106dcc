package spec

import (
	"errors"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"exit", "worker:exit", "main:worker:exit", "proc:::exit", ":::", "::::",
		"gosdt:github.com/x/y:y.(*T).Method:entry", `y.(\*T).M`, "y.F[...]",
		"[a-z]*:[!x]?", `a\:b`, "a[:]b", "[", `x\`, "a b", "\xff", "[z-a]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Spec != s || e.Reason == "" {
				t.Fatalf("Parse(%q): bad error %#v", s, err)
			}
			_ = err.Error()
			return
		}
		str := sp.String()
		again, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(%q) = %#v, but Parse(%q): %v", s, sp, str, err)
		}
		if again != sp {
			t.Fatalf("Parse(%q) = %#v, but Parse(%q) = %#v", s, sp, str, again)
		}
		// Every parsed field is a well-formed glob that matches itself
		// when it has no metacharacters.
		for _, f := range []string{sp.Provider, sp.Module, sp.Function, sp.Name} {
			if !strings.ContainsAny(f, `*?[\`) && !Match(f, f) {
				t.Fatalf("field %q of %q does not match itself", f, s)
			}
		}
		_ = sp.Match(sp.Provider, sp.Module, sp.Function, sp.Name)
	})
}

func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"exit", "exit"}, {"*", "github.com/x/y"}, {"a*b*c", "aXbYc"},
		{"[!a-c]x", "dx"}, {`\*`, "*"}, {"y.F[...]", "y.F[...]"},
		{"[", "["}, {`\`, `\`}, {"?", "é"}, {"\xff", "\xfe"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		got := Match(pattern, s)
		if pattern == "" && !got {
			t.Fatalf("Match(\"\", %q) = false", s)
		}
		if pattern != "" && !strings.ContainsAny(pattern, `*?[\`) {
			if want := pattern == s; got != want {
				t.Fatalf("Match(%q, %q) = %v, want %v", pattern, s, got, want)
			}
			if !Match(pattern, pattern) {
				t.Fatalf("Match(%q, %q) = false", pattern, pattern)
			}
		}
		// Escaping every character of s gives a pattern matching
		// exactly s.
		var b strings.Builder
		for _, r := range s {
			b.WriteByte('\\')
			b.WriteRune(r)
		}
		if esc := b.String(); esc != "" && strings.ToValidUTF8(s, "") == s {
			if !Match(esc, s) {
				t.Fatalf("Match(%q, %q) = false", esc, s)
			}
			if s2 := s + "x"; Match(esc, s2) {
				t.Fatalf("Match(%q, %q) = true", esc, s2)
			}
		}
		// A pattern is matched by '*' around it at least as often.
		if got && !Match("*"+pattern+"*", s) {
			t.Fatalf("Match(%q, %q) but not with surrounding stars", pattern, s)
		}
	})
}
