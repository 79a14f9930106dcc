package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/spec"
)

// noteFunctions says on stderr which functions a spec's function field names when it
// was written short ((*Server).ServeHTTP, ServeHTTP: spec.MatchFunc) and matches
// more than one function in the process: a bare name is never ambiguous in silence.
func noteFunctions(cl *client, specText string, stderr io.Writer) {
	sp, err := spec.Parse(specText)
	if err != nil || sp.Function == "" {
		return
	}
	r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: specText})
	if err != nil {
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
