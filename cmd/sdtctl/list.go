package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

func cmdList(args []string, stdout, stderr io.Writer) error {
	o := newFlags("list", stderr, true)
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if o.pid == 0 && o.name == "" && len(pos) > 0 {
		fi, err := os.Stat(pos[0])
		if err != nil && strings.ContainsRune(pos[0], '/') {
			return fail(exitError, "%v", err) // a path, not a spec: specs have no '/' before a ':'
		}
		if err == nil && !fi.Mode().IsRegular() {
			hint := ""
			if !strings.ContainsRune(pos[0], '/') {
				hint = fmt.Sprintf(" (a spec that is also a file's name: write it with its colons, :::%s)", pos[0])
			}
			return fail(exitUsage, "list: %s is a %s, not a binary: name a Go executable%s", pos[0], fileKind(fi.Mode()), hint)
		}
		if err == nil && fi.Mode().IsRegular() {
			if len(pos) > 2 {
				return fail(exitUsage, "list BINARY [SPEC]: too many arguments")
			}
			return listBinary(pos[0], pos[1:], o.json, stdout, stderr)
		}
	}
	if len(pos) > 1 {
		return fail(exitUsage, "list: one SPEC at most")
	}
	spec := ""
	if len(pos) == 1 {
		spec = pos[0]
		if err := checkSpecs(pos); err != nil {
			return err
		}
	}
	cls, err := o.targets(true)
	if err != nil {
		return err
	}
	fails := failures{stderr: stderr}
	matched := false
	for _, cl := range cls {
		r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: spec})
		if err == nil && nameRuntimeArgs(cl, r.Probes) {
			r, err = cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: spec}) // again, with the signatures
		}
		cl.close()
		if err != nil {
			fails.add(err)
			continue
		}
		matched = matched || len(r.Probes) > 0
		if o.json {
			for _, p := range r.Probes {
				printJSON(stdout, map[string]any{"pid": cl.pid, "probe": p})
			}
			continue
		}
		fmt.Fprintf(stdout, "pid %d (%s%s): %s\n", cl.pid, cl.hello.Command, cl.nsNote(), plural(len(r.Probes), "probe"))
		if cl.hello.Layouts != "" {
			fmt.Fprintf(stdout, "  %s\n", cl.hello.Layouts)
		}
		printProbes(stdout, r.Probes)
	}
	if err := fails.err(); err != nil {
		return err
	}
	if spec != "" && !matched {
		return fail(exitNoMatch, "%q matches no probe (in %s)", spec, pidList(cls))
	}
	return nil
}

// fileKind names what a file that is not a regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

func printProbes(w io.Writer, ps []ctlproto.Probe) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBE\tKIND\tARGS\tSTATE\tHITS\tHELD BY")
	for _, p := range ps {
		var args []string
		for _, a := range p.Args {
			args = append(args, a.Name+" "+a.Type)
		}
		state := "off"
		if p.Enabled {
			state = "on"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", p.Name, p.Kind, strings.Join(args, ", "), state, p.Hits, strings.Join(p.HeldBy, ", "))
		for _, s := range p.Sites {
			why := ""
			if s.Reason != "" {
				why = " (" + s.Reason + ")"
			}
			fmt.Fprintf(tw, "  %#x %s:%d\t\t%s\t%s%s\t%d\t%s\n", s.Addr, shortFile(s.File), s.Line, s.Kind, s.State, why, s.Hits, strings.Join(s.HeldBy, ", "))
		}
	}
	tw.Flush()
}

func shortFile(f string) string {
	if i := strings.LastIndex(f, "/"); i >= 0 {
		if j := strings.LastIndex(f[:i], "/"); j >= 0 {
			return f[j+1:]
		}
	}
	return f
}
