package funcsig

import (
	"regexp"
	"strings"
)

// A generic function is compiled once per GC shape, with a dictionary as an extra
// parameter (cmd/compile/internal/noder, shapeSig): after the receiver of a method,
// first otherwise. The DWARF may leave it out; it takes a register all the same.
const dictName = ".dict"

var dictType = &gtype{name: "*uintptr", kind: kPointer, size: ptrSize, align: ptrSize}

// closureName is the last element of a closure's name: func1, gowrap2, deferwrap1.
var closureName = regexp.MustCompile(`^(func|gowrap|deferwrap)[0-9]+$`)

// dictIndex returns where the dictionary parameter of the function the runtime names
// name goes among its parameters: 0 for a shaped function, 1 for a shaped method; -1
// when it has none (not a shape instantiation, or a closure inside one, which reaches
// the dictionary through its context).
func dictIndex(name string) int {
	if !strings.Contains(name, "[go.shape.") || strings.HasPrefix(name, "type:") {
		// type:.eq.T[go.shape...]: the compiler's equality of a shaped type takes no
		// dictionary.
		return -1
	}
	// The elements after the package path, split at the dots outside brackets and
	// parentheses: "pkg", "(*T[go.shape.int])", "M".
	var elems []string
	depth, start := 0, 0
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '/':
			if depth == 0 {
				elems, start = nil, i+1
			}
		case '.':
			if depth == 0 {
				elems, start = append(elems, name[start:i]), i+1
			}
		}
	}
	elems = append(elems, name[start:])
	shaped := func(e string) bool { return strings.Contains(e, "[go.shape.") }
	switch {
	case len(elems) == 2 && shaped(elems[1]):
		return 0 // pkg.F[shape]
	case len(elems) == 3 && (shaped(elems[1]) || shaped(elems[2])) && !closureName.MatchString(elems[2]):
		return 1 // pkg.(*T[shape]).M, pkg.T[shape].M; go1.27's pkg.(*T).M[shape], pkg.T[shape].M[shape]
	}
	return -1
}
