// Package tracedcopy names the traced copies that internal/fbt writes of the functions
// it instruments, and names what runs in a copy after the function it copies, so that
// a probe's name never depends on which of the two bodies ran: `pkg.Serve` runs its
// body as written while its fbt probes are off and calls `pkg.__sdt_fbt0_0t`, the
// copy, while one is on; a hand-written probe in the body has a site in each, and both
// are `...:pkg.Serve:name`. Package sdt (the live process) and sdtctl (a binary read
// offline) name sites so; internal/fbt makes the names.
//
// It depends on nothing but strings: sdt links it into every program.
package tracedcopy

import (
	"strconv"
	"strings"
)

// prefix starts every identifier internal/fbt declares.
const prefix = "__sdt_fbt"

// Ident is the stem of the identifiers of the n-th function instrumented in file
// number file of a package: the stem plus "t" is its traced copy, plus "e" and "r"
// its entry and return probes. Unique within a package.
func Ident(file, n int) string { return prefix + strconv.Itoa(file) + "_" + strconv.Itoa(n) }

// Split finds a traced copy in fn, a function's name as sites are named without
// their package path ("lib.__sdt_fbt0_0t", "lib.(*T).__sdt_fbt0_1t.func2.1",
// "lib.__sdt_fbt0_2t[...]", "lib.__sdt_fbt0_2t[go.shape.int]"): the copy's
// identifier ("__sdt_fbt0_1t") and what follows it, type arguments left out
// (".func2.1"). ok is false for a name outside every traced copy.
func Split(fn string) (ident, rest string, ok bool) {
	i := strings.Index(fn, "."+prefix)
	if i < 0 {
		return "", "", false
	}
	s := fn[i+1+len(prefix):]
	j := digits(s)
	if j == 0 || j == len(s) || s[j] != '_' {
		return "", "", false
	}
	k := j + 1 + digits(s[j+1:])
	if k == j+1 || k == len(s) || s[k] != 't' {
		return "", "", false
	}
	ident, rest = fn[i+1:i+1+len(prefix)+k+1], s[k+1:]
	if strings.HasPrefix(rest, "[") {
		// A generic copy's type arguments ("[...]" as the runtime prints them, the
		// shapes as the symbol table has them): the function's own name carries them.
		depth := 0
		for n, c := range rest {
			if c == '[' {
				depth++
			} else if c == ']' {
				if depth--; depth == 0 {
					rest = rest[n+1:]
					break
				}
			}
		}
	}
	if rest != "" && rest[0] != '.' && rest[0] != '-' {
		return "", "", false // a longer identifier that happens to start alike
	}
	return ident, rest, true
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// Rename names rest, what follows a traced copy in a site's function name (Split),
// after fn, the function copied ("lib.Serve"). The copy is the function. Its first
// function literal is the deferred check internal/fbt adds (the function too: only
// the return probe fires there), and the user's function literals follow, one number
// later than in the function as written: ".func2.1" is fn + ".func1.1". Range-over-func
// bodies ("-range1") and go/defer wrappers count apart and keep their numbers.
func Rename(fn, rest string) string {
	num, ok := strings.CutPrefix(rest, ".func")
	if !ok {
		return fn + rest
	}
	j := digits(num)
	n, err := strconv.Atoi(num[:j])
	if err != nil || n < 1 {
		return fn + rest
	}
	if n == 1 {
		return fn + num[j:] // the deferred check, and any literal inside it
	}
	return fn + ".func" + strconv.Itoa(n-1) + num[j:]
}
