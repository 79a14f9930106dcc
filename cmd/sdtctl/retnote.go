package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// maxReturnNotes is how many refused return probes noteReturns names one by one.
const maxReturnNotes = 10

// noteReturns says on stderr which run-time return probes that probes (a list of what
// a spec names) lists take none, with the process's reason: a function whose entry is
// traced and whose returns are not would otherwise show entries and no returns, and
// say nothing.
func noteReturns(pid int, probes []ctlproto.Probe, stderr io.Writer) {
	entries := map[string]bool{} // provider:module:function of the entries that take a probe
	for _, p := range probes {
		if fn, ok := strings.CutSuffix(p.Name, ":entry"); ok && p.Kind == "runtime" && !allRefused(p.Sites) {
			entries[fn] = true
		}
	}
	var lines []string
	for _, p := range probes {
		fn, ok := strings.CutSuffix(p.Name, ":return")
		if !ok || p.Kind != "runtime" || !allRefused(p.Sites) {
			continue
		}
		also := ""
		if entries[fn] {
			also = " (its entry does)"
		}
		lines = append(lines, fmt.Sprintf("sdtctl: pid %d: %s takes no probe%s: %s", pid, p.Name, also, p.Sites[0].Reason))
	}
	for i, l := range lines {
		if i == maxReturnNotes {
			fmt.Fprintf(stderr, "sdtctl: pid %d: and %d more return probes refused (sdtctl list -p %d shows why)\n", pid, len(lines)-i, pid)
			break
		}
		fmt.Fprintln(stderr, l)
	}
}

// allRefused reports whether sites is a run-time probe's one refused point.
func allRefused(sites []ctlproto.Site) bool {
	for _, s := range sites {
		if s.State != "refused" {
			return false
		}
	}
	return len(sites) > 0
}

// noteReturnsOf lists specs in process pid on a connection of its own (a followed
// command's streams already) and says which of their return probes take none.
func noteReturnsOf(pid int, specs []string, stderr io.Writer) {
	cl, err := dial(pid)
	if err != nil {
		return
	}
	defer cl.close()
	for _, s := range specs {
		if !strings.HasPrefix(s, "fbt:") {
			continue
		}
		if r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: s}); err == nil {
			noteReturns(pid, r.Probes, stderr)
		}
	}
}
