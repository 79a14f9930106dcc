package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/spec"
)

// noteFunctions says on stderr which functions a spec's function field names when it
// was written short ((*Server).ServeHTTP, ServeHTTP: spec.MatchFunc) and matches
// more than one function in the process: a bare name is never ambiguous in silence.
// It also says which of the spec's run-time return probes take none (noteReturns).
func noteFunctions(cl *client, specText string, stderr io.Writer) {
	sp, err := spec.Parse(specText)
	if err != nil || sp.Function == "" && sp.Provider != "fbt" {
		return
	}
	r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: specText})
	if err != nil {
		return
	}
	noteReturns(cl.pid, r.Probes, stderr)
	if sp.Function == "" {
		return
	}
	var short []string
	for _, p := range r.Probes {
		parts := strings.SplitN(p.Name, ":", 4)
		if len(parts) != 4 || parts[2] == "" {
			continue
		}
		fn := parts[1] + ":" + parts[2]
		if !spec.Match(sp.Function, parts[2]) && !slices.Contains(short, fn) {
			short = append(short, fn)
		}
	}
	if len(short) > 1 {
		fmt.Fprintf(stderr, "sdtctl: pid %d: function %q matches %d functions: %s\n", cl.pid, sp.Function, len(short), strings.Join(short, ", "))
	}
}

// noteLeftOut says on stderr which probes spec matches that lack an argument a flag
// names (--where's, --by's, --value's): the process leaves them out of the trace or
// the stat, and refuses the flag only when every probe lacks one.
func noteLeftOut(cl *client, specText, flag string, names []string, stderr io.Writer) {
	if len(names) == 0 {
		return
	}
	r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: specText})
	if err != nil {
		return
	}
	var left []string
	missing := map[string]bool{}
	for _, p := range r.Probes {
		for _, n := range names {
			if !hasArg(p.Args, n) {
				if !slices.Contains(left, p.Name) {
					left = append(left, p.Name)
				}
				missing[n] = true
			}
		}
	}
	if len(left) == 0 || len(left) == len(r.Probes) {
		return // none left out, or all: then the process refuses, naming the argument
	}
	var what []string
	for _, n := range names {
		if missing[n] {
			what = append(what, n)
		}
	}
	fmt.Fprintf(stderr, "sdtctl: pid %d: %s: %d of %d probes have no argument %s, left out: %s\n",
		cl.pid, flag, len(left), len(r.Probes), strings.Join(what, ", "), strings.Join(left, ", "))
}

// hasArg reports whether a probe with args has the argument name (its name, or argN).
func hasArg(args []ctlproto.Arg, name string) bool {
	for i, a := range args {
		if a.Name == name || name == "arg"+strconv.Itoa(i) {
			return true
		}
	}
	return false
}

// whereNames is the argument names a --where expression uses (sdt/internal/pred's
// language: names, numbers, "strings", true and false, operators).
func whereNames(expr string) []string {
	var names []string
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"':
			for i++; i < len(expr) && expr[i] != '"'; i++ {
				if expr[i] == '\\' {
					i++
				}
			}
			i++
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i
			for j < len(expr) && (expr[j] == '_' || unicode.IsLetter(rune(expr[j])) || unicode.IsDigit(rune(expr[j]))) {
				j++
			}
			if w := expr[i:j]; w != "true" && w != "false" && !slices.Contains(names, w) {
				names = append(names, w)
			}
			i = j
		case unicode.IsDigit(rune(c)):
			for i < len(expr) && (expr[i] == 'x' || expr[i] == 'X' || unicode.IsDigit(rune(expr[i])) || strings.ContainsRune("abcdefABCDEF", rune(expr[i]))) {
				i++
			}
		default:
			i++
		}
	}
	return names
}
