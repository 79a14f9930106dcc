package spec

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// goGeneric is the literal sequence Go uses in the symbol names of generic
// function instantiations (for example "pkg.Map[...]"). A pattern containing
// it matches it literally instead of treating it as a character class, which
// would otherwise match a single '.'.
const goGeneric = "[...]"

// Match reports whether s matches the glob pattern in its entirety.
//
// The pattern syntax is:
//
//	term:
//		'*'            any run of characters, including '/' and '.', or none
//		'?'            any single character
//		'[' class ']'  any character in class
//		'\\' c         the character c literally
//		c              any other character c matches itself
//	class:
//		['!' | '^'] { lo ['-' hi] }
//		               one or more characters lo or ranges lo-hi; a leading
//		               '!' or '^' negates the class; ']', '-' and '\\' in
//		               lo or hi must be escaped with '\\'
//
// As a special case the exact sequence "[...]", which Go uses in the names
// of generic function instantiations, matches itself literally.
//
// An empty pattern matches anything. A malformed pattern (see [Parse])
// matches nothing. Matching takes time proportional to
// len(pattern)*len(s) in the worst case.
func Match(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	if _, err := checkGlob(pattern); err != "" {
		return false
	}
	return match(pattern, s)
}

// match implements Match for a pattern already checked by checkGlob. It is
// the usual iterative matcher that remembers only the most recent '*' and
// backtracks to it, so it never goes exponential.
func match(p, s string) bool {
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(p) || sx < len(s) {
		if px < len(p) {
			switch c := p[px]; {
			case c == '*':
				starPx, starSx = px, sx
				px++
				continue
			case c == '?':
				if sx < len(s) {
					_, w := utf8.DecodeRuneInString(s[sx:])
					px++
					sx += w
					continue
				}
			case c == '[' && strings.HasPrefix(p[px:], goGeneric):
				if strings.HasPrefix(s[sx:], goGeneric) {
					px += len(goGeneric)
					sx += len(goGeneric)
					continue
				}
			case c == '[':
				if sx < len(s) {
					r, w := utf8.DecodeRuneInString(s[sx:])
					ok, n, _ := class(p[px:], r)
					if ok {
						px += n
						sx += w
						continue
					}
				}
			case c == '\\':
				// checkGlob guarantees a character follows.
				_, pw := utf8.DecodeRuneInString(p[px+1:])
				lit := p[px+1 : px+1+pw]
				if strings.HasPrefix(s[sx:], lit) {
					px += 1 + pw
					sx += pw
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		// Mismatch: let the last '*' swallow one more character and retry.
		if starPx >= 0 && starSx < len(s) {
			_, w := utf8.DecodeRuneInString(s[starSx:])
			starSx += w
			px, sx = starPx+1, starSx
			continue
		}
		return false
	}
	return true
}

// checkGlob checks the syntax of the glob p. On error it returns the byte
// offset of the problem and a description; otherwise it returns "".
func checkGlob(p string) (int, string) {
	for i := 0; i < len(p); {
		switch p[i] {
		case '\\':
			if i+1 >= len(p) {
				return i, "trailing '\\'"
			}
			_, w := utf8.DecodeRuneInString(p[i+1:])
			i += 1 + w
		case '[':
			_, n, err := class(p[i:], 0)
			if err != "" {
				return i, err
			}
			i += n
		default:
			i++
		}
	}
	return 0, ""
}

// class parses the character class at the start of p (p[0] == '[') and
// reports whether r is in it, and the length of the class including the
// closing ']'. On a syntax error it returns a description of it.
func class(p string, r rune) (matched bool, n int, err string) {
	i := 1
	negate := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		negate = true
		i++
	}
	nitems := 0
	for {
		if i >= len(p) {
			return false, 0, "unclosed '['"
		}
		if p[i] == ']' {
			if nitems == 0 {
				return false, 0, "empty character class"
			}
			return matched != negate, i + 1, ""
		}
		start := i
		lo, w, err := classChar(p[i:])
		if err != "" {
			return false, 0, err
		}
		i += w
		hi := lo
		if i < len(p) && p[i] == '-' {
			hi, w, err = classChar(p[i+1:])
			if err != "" {
				return false, 0, err
			}
			i += 1 + w
			if hi < lo {
				return false, 0, fmt.Sprintf("reversed range %q in character class", p[start:i])
			}
		}
		if lo <= r && r <= hi {
			matched = true
		}
		nitems++
	}
}

// classChar decodes one possibly escaped character of a class item.
func classChar(p string) (r rune, n int, err string) {
	if p == "" {
		return 0, 0, "unclosed '['"
	}
	switch p[0] {
	case '-', ']':
		return 0, 0, fmt.Sprintf("unescaped %q in character class", p[0])
	case '\\':
		if len(p) == 1 {
			return 0, 0, "trailing '\\'"
		}
		r, w := utf8.DecodeRuneInString(p[1:])
		return r, 1 + w, ""
	}
	r, w := utf8.DecodeRuneInString(p)
	return r, w, ""
}
