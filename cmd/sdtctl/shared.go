package main

// What several commands share: JSON output, counts in words, the checks of specs.

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/spec"
)

func printJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "%s\n", b)
}

// pidList names processes: "pid 42" or "pids 42, 43".
func pidList(cls []*client) string {
	if len(cls) == 1 {
		return fmt.Sprintf("pid %d", cls[0].pid)
	}
	s := make([]string, len(cls))
	for i, cl := range cls {
		s[i] = strconv.Itoa(cl.pid)
	}
	return "pids " + strings.Join(s, ", ")
}

// plural is n and noun, the noun with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// checkSpecCount refuses more specs than one request carries (ctlproto.MaxSpecs), as
// the process would, before any process is asked.
func checkSpecCount(cmd string, specs []string) error {
	if len(specs) > ctlproto.MaxSpecs {
		return fail(exitUsage, "%s: %d specs: at most %d in one command (globs match many probes in one spec; or run it again with the rest)", cmd, len(specs), ctlproto.MaxSpecs)
	}
	return nil
}

// oneSpec checks that a trace or stat got one SPEC, saying what else it got: a value
// given to a flag that takes none (--many 100000) is the usual cause.
func oneSpec(cmd string, pos []string) error {
	switch len(pos) {
	case 1:
		return nil
	case 0:
		return fail(exitUsage, "%s: no SPEC", cmd)
	}
	quoted := make([]string, len(pos))
	for i, p := range pos {
		quoted[i] = strconv.Quote(p)
	}
	hint := ""
	for _, p := range pos[1:] {
		if _, err := strconv.Atoi(p); err == nil {
			hint = fmt.Sprintf(" (%s is no spec: --many, --stack, --clear and --json take no value; -c takes a count)", p)
			break
		}
	}
	return fail(exitUsage, "%s: want one SPEC, got %d: %s%s", cmd, len(pos), strings.Join(quoted, " "), hint)
}

// checkSpecs refuses a malformed spec before any process is looked for: the error is
// the spec's, whatever runs.
func checkSpecs(specs []string) error {
	for _, s := range specs {
		if _, err := spec.Parse(s); err != nil {
			return fail(exitBadSpec, "%v", err)
		}
	}
	return nil
}
