package fbt

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rule is one line of a rules file: a package and a function pattern.
type Rule struct {
	Line int
	Text string // as written
	Pkg  string // import path
	Func string // "*", "F", "T.M", "(*T).M", with * as a wildcard after the receiver
}

// Rules is a parsed rules file.
type Rules struct {
	Path  string
	Rules []Rule
	Hash  string // of the file's content, for the build cache's tool ID
}

// RuleError is a rules file's error, with the line at fault.
type RuleError struct {
	Path string
	Line int
	Text string
	Msg  string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("%s:%d: %s: %q", e.Path, e.Line, e.Msg, e.Text)
}

// ParseFile reads a rules file: one pattern per line, # comments, blank lines.
func ParseFile(path string) (*Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse parses the content of a rules file; errors name their line.
func Parse(path string, content []byte) (*Rules, error) {
	rs := &Rules{Path: path, Hash: hash(content)}
	sc := bufio.NewScanner(bytes.NewReader(content))
	n := 0
	for sc.Scan() {
		n++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		r, msg := parseRule(text)
		if msg != "" {
			return nil, &RuleError{Path: path, Line: n, Text: text, Msg: msg}
		}
		r.Line = n
		rs.Rules = append(rs.Rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return rs, nil
}

// parseRule splits pkg/path.Func: the package name ends at the first dot after the
// last slash.
func parseRule(text string) (Rule, string) {
	if strings.ContainsAny(text, " \t") {
		return Rule{}, "a pattern has no spaces (one pattern per line)"
	}
	slash := strings.LastIndexByte(text, '/')
	dot := strings.IndexByte(text[slash+1:], '.')
	if dot < 0 {
		return Rule{}, "want package/path.Function, package/path.(*Type).Method or package/path.*"
	}
	pkg, fn := text[:slash+1+dot], text[slash+2+dot:]
	switch {
	case pkg == "" || strings.HasSuffix(pkg, "/"):
		return Rule{}, "empty package path"
	case fn == "":
		return Rule{}, "empty function name after the package path"
	case strings.ContainsAny(pkg, "*?[]()"):
		return Rule{}, "the package path has no wildcards"
	case strings.Count(fn, "(") != strings.Count(fn, ")"):
		return Rule{}, "unbalanced parentheses in the function"
	}
	if strings.HasPrefix(fn, "(") {
		if !strings.HasPrefix(fn, "(*") || !strings.Contains(fn, ").") {
			return Rule{}, "a method is written (*Type).Method or Type.Method"
		}
	}
	if strings.Count(fn, ".") > 1 {
		return Rule{}, "too many dots in the function: Function, Type.Method or (*Type).Method"
	}
	if msg := checkNames(text, fn); msg != "" {
		return Rule{}, msg
	}
	return Rule{Text: text, Pkg: pkg, Func: fn}, ""
}

// checkNames refuses what no Go function is named: a byte that no import path or
// identifier has, a glob's syntax other than * (a rule is not a spec: [a-z] is not a
// class here), a receiver of more than one *.
func checkNames(text, fn string) string {
	for i, r := range text {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return fmt.Sprintf("byte %d is %q: not in an import path or a Go name", i, text[i])
		}
	}
	recv, name := "", fn
	switch {
	case strings.HasPrefix(fn, "("):
		i := strings.Index(fn, ").")
		recv, name = fn[2:i], fn[i+2:]
		if strings.HasPrefix(recv, "*") {
			return "a method's receiver is (*Type), with one *: " + fn + " names no method"
		}
	case strings.Contains(fn, "."):
		recv, name, _ = strings.Cut(fn, ".")
	}
	for _, part := range []string{recv, name} {
		for _, r := range part {
			if r != '*' && r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return fmt.Sprintf("%q in %q: a function or type is a Go name, where * is the only wildcard", r, fn)
			}
		}
	}
	if strings.HasPrefix(fn, "(") && recv == "" {
		return "a method is written (*Type).Method or Type.Method"
	}
	return ""
}

// ForPackage returns the rules of package pkg.
func (rs *Rules) ForPackage(pkg string) []Rule {
	var out []Rule
	for _, r := range rs.Rules {
		if r.Pkg == pkg {
			out = append(out, r)
		}
	}
	return out
}

// Match reports whether the rule names the function fn, written as in a rule
// (F, T.M, (*T).M, type parameters left out).
func (r Rule) Match(fn string) bool {
	return glob(strings.ReplaceAll(r.Func, "(*", "(\x00"), strings.ReplaceAll(fn, "(*", "(\x00"))
}

// glob matches s against pattern p, where * matches any run of characters.
func glob(p, s string) bool {
	for len(p) > 0 {
		if p[0] == '*' {
			p = p[1:]
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if glob(p, s[i:]) {
					return true
				}
			}
			return false
		}
		if s == "" || p[0] != s[0] {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return s == ""
}
