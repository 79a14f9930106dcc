package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

func cmdPs(args []string, stdout, stderr io.Writer) error {
	o := newFlags("ps", stderr, false)
	if _, err := o.parse(args); err != nil {
		return err
	}
	ps := procs()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !o.json {
		fmt.Fprintln(tw, "PID\tCOMMAND\tPROBES\tSITES ON")
	}
	var notes []string // processes on a Go whose layouts gosdt has not read
	for _, cl := range ps {
		h := cl.hello
		if o.json {
			m := map[string]any{"pid": cl.pid, "ns_pid": h.Pid, "command": h.Command, "probes": h.NProbes, "sites_on": h.SitesOn, "go": h.GoVersion}
			if h.Layouts != "" {
				m["layouts_refused"] = h.Layouts
			}
			printJSON(stdout, m)
		} else {
			fmt.Fprintf(tw, "%d\t%s%s\t%d\t%d\n", cl.pid, h.Command, cl.nsNote(), h.NProbes, h.SitesOn)
			if h.Layouts != "" {
				notes = append(notes, fmt.Sprintf("pid %d: %s", cl.pid, h.Layouts))
			}
		}
		cl.close()
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(stdout, n)
	}
	return nil
}
