package spec

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/goversion"
)

// Limits on the size of a probe spec.
const (
	MaxSpecLen  = 1024 // bytes in a whole spec
	MaxFieldLen = 256  // bytes in one field
)

// Spec is a parsed probe description. The fields hold the globs as written;
// an empty field matches anything.
type Spec struct {
	Provider, Module, Function, Name string
}

// Error is the error returned by Parse for a malformed spec.
type Error struct {
	Spec   string // the spec as given to Parse
	Pos    int    // byte offset in Spec where it goes wrong; -1 for the spec as a whole
	Reason string // what is wrong with it
}

func (e *Error) Error() string {
	s := e.Spec
	if len(s) > 128 {
		n := 128
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "..."
	}
	return fmt.Sprintf("malformed probe spec %q: %s", s, e.Reason)
}

var fieldNames = [4]string{"provider", "module", "function", "name"}

// Parse parses a probe description of the form provider:module:function:name.
// As in DTrace, a description with fewer than four fields fills from the
// right: "exit" names only the probe name, "worker:exit" a function and name,
// "main:worker:exit" a module, function and name. Each field is a glob (see
// [Match]); a ':' inside a character class or escaped with '\' does not
// separate fields. Errors are of type *[Error].
func Parse(s string) (Spec, error) {
	pos := -1
	fail := func(format string, args ...any) (Spec, error) {
		return Spec{}, &Error{Spec: s, Pos: pos, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case s == "":
		return fail("empty spec")
	case len(s) > MaxSpecLen:
		return fail("longer than %d bytes", MaxSpecLen)
	case !utf8.ValidString(s):
		for i := 0; i < len(s); {
			r, w := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && w == 1 {
				pos = i
				break
			}
			i += w
		}
		return fail("invalid UTF-8")
	}
	for i, r := range s {
		pos = i
		if unicode.IsSpace(r) {
			return fail("whitespace %q at byte %d", r, i)
		}
		if unicode.IsControl(r) {
			return fail("control character %q at byte %d", r, i)
		}
	}
	pos = -1

	// Split on ':' outside character classes and escapes, checking the
	// glob syntax on the way.
	var fields []string
	start := 0
	for i := 0; i <= len(s); {
		if i == len(s) || s[i] == ':' {
			if len(fields) == len(fieldNames) {
				pos = start - 1 // the separator that opened a fifth field
				return fail("more than %d fields", len(fieldNames))
			}
			fields = append(fields, s[start:i])
			i++
			start = i
			continue
		}
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				pos = i
				return fail("trailing '\\'")
			}
			_, w := utf8.DecodeRuneInString(s[i+1:])
			i += 1 + w
		case '[':
			_, n, err := class(s[i:], 0)
			if err != "" {
				pos = i
				return fail("%s at byte %d", err, i)
			}
			i += n
		default:
			i++
		}
	}

	var f [4]string
	copy(f[len(f)-len(fields):], fields)
	for i, v := range f {
		if len(v) > MaxFieldLen {
			return fail("%s field longer than %d bytes", fieldNames[i], MaxFieldLen)
		}
	}
	return Spec{Provider: f[0], Module: f[1], Function: f[2], Name: f[3]}, nil
}

// Match reports whether the probe provider:module:function:name matches
// the spec: every non-empty field of s must match the corresponding part
// in its entirety; the function field as [MatchFunc] says.
func (s Spec) Match(provider, module, function, name string) bool {
	return Match(s.Provider, provider) &&
		Match(s.Module, module) &&
		MatchFunc(s.Function, function) &&
		Match(s.Name, name)
}

// MatchFunc reports whether pattern matches the function name function, as Go names
// it (handlers.(*Server).ServeHTTP, store.(*Stack[...]).Pop, main.main.func1), the
// way people write it: the whole name, the name without its package
// ((*Server).ServeHTTP), or its last part alone (ServeHTTP; Pop for
// store.(*Stack[...]).Pop, Sum for store.Sum[...], Map for go1.27's generic method
// store.(*Box).Map[...]). A bare name may so
// match several functions (every ServeHTTP of the module): all of them, each named in
// full wherever probes are shown.
func MatchFunc(pattern, function string) bool {
	if Match(pattern, function) || pattern == function {
		// Literally too: a generic function's name as go tool nm gives it has its
		// shapes in brackets, which a glob would read as a class.
		return true
	}
	if pattern == "" || function == "" {
		return false
	}
	// The package's name is an identifier: its dot is the first.
	i := strings.IndexByte(function, '.')
	if i < 0 {
		return false
	}
	rest := function[i+1:]
	if Match(pattern, rest) || pattern == rest {
		return true
	}
	last := lastPart(rest)
	if last != rest && Match(pattern, last) {
		return true
	}
	// A generic function or method by its name alone: Sum for store.Sum[...], Map for
	// store.(*Box).Map[go.shape.string] (go1.27's generic methods).
	if j := strings.IndexByte(last, '['); j > 0 && strings.HasSuffix(last, "]") && strings.IndexByte(last[:j], '(') < 0 && strings.IndexByte(last[:j], ')') < 0 && Match(pattern, last[:j]) {
		return true
	}
	// A name as the linker writes it (go tool nm: its shapes) is also the one the
	// runtime prints (FuncForPC: [...]), which a spec may give.
	if strings.Contains(function, "[go.shape.") {
		if printed := functab.PrintName(function, goversion.Running()); printed != function {
			return MatchFunc(pattern, printed)
		}
	}
	return false
}

// lastPart is the part of a function name after its last dot outside brackets and
// parentheses: the method of (*T[...]).M, the closure of F.func1.
func lastPart(name string) string {
	depth := 0
	for i := len(name) - 1; i >= 0; i-- {
		switch name[i] {
		case ')', ']':
			depth++
		case '(', '[':
			depth--
		case '.':
			if depth == 0 {
				return name[i+1:]
			}
		}
	}
	return name
}

// String returns the spec in canonical four-field form, such as "proc:::exit".
// For a Spec returned by Parse, Parse(s.String()) returns s again.
func (s Spec) String() string {
	return s.Provider + ":" + s.Module + ":" + s.Function + ":" + s.Name
}
