package main

import (
	"fmt"
	"strings"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// manyFuncs is how many functions a spec may place run-time probes on before sdtctl
// asks for --many: each is written in the running program's text in one
// stop-the-world, and each call of them then pays for a probe.
const manyFuncs = 16

// manyFlag adds --many to a command that places probes.
func (o *opts) manyFlag() *bool {
	return o.fs.Bool("many", false, fmt.Sprintf("place run-time function probes on more than %d functions at once", manyFuncs))
}

// checkRuntimeCost says what a spec's run-time function probes would cost in cl's
// process before any is placed, and refuses more than manyFuncs functions without
// --many.
func checkRuntimeCost(cl *client, specText string, many bool) error {
	if many || !strings.HasPrefix(specText, "fbt:") {
		return nil
	}
	r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: specText})
	if err != nil {
		return nil // the request itself will say what is wrong
	}
	funcs, points := map[string]bool{}, 0
	for _, p := range r.Probes {
		if p.Kind != "runtime" || p.Enabled {
			continue
		}
		for _, s := range p.Sites {
			if s.State == "unpatched" {
				funcs[strings.TrimSuffix(strings.TrimSuffix(p.Name, ":entry"), ":return")] = true
				points++
			}
		}
	}
	if len(funcs) <= manyFuncs {
		return nil
	}
	return fail(exitUsage, "pid %d: %q places run-time probes on %d functions (%d points of their code, written in one stop-the-world of the process; every call of them then pays for its probe): pass --many to go on, or name fewer (sdtctl list -p %d %q shows them)",
		cl.pid, specText, len(funcs), points, cl.pid, specText)
}
