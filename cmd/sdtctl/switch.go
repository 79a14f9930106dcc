package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

func cmdSwitch(cmd string, args []string, stdout, stderr io.Writer) error {
	o := newFlags(cmd, stderr, true)
	many := new(bool)
	if cmd == ctlproto.OpEnable {
		many = o.manyFlag()
	}
	specs, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(specs) == 0 {
		return fail(exitUsage, "%s: no SPEC", cmd)
	}
	if err := checkSpecCount(cmd, specs); err != nil {
		return err
	}
	if err := checkSpecs(specs); err != nil {
		return err
	}
	cls, err := o.targets(true)
	if err != nil {
		return err
	}
	fails := failures{stderr: stderr}
	for _, cl := range cls {
		for _, sp := range specs {
			if cmd == ctlproto.OpEnable {
				if err := checkRuntimeCost(cl, sp, *many); err != nil {
					return err
				}
			}
			noteFunctions(cl, sp, stderr)
		}
		q := &ctlproto.Request{Op: cmd, Specs: specs, Persist: cmd == ctlproto.OpEnable}
		r, err := cl.call(q)
		cl.close()
		if err != nil {
			fails.add(err)
			continue
		}
		if o.json {
			printJSON(stdout, map[string]any{"pid": cl.pid, "command": cl.hello.Command, "op": cmd, "sites": r.N, "kept": r.Kept, "kept_by": r.KeptBy, "already_on": r.AlreadyOn})
			continue
		}
		fmt.Fprintf(stdout, "pid %d (%s): %sd %s", cl.pid, cl.hello.Command, cmd, plural(r.N, "site"))
		if r.Kept > 0 {
			held := "another owner"
			if len(r.KeptBy) > 0 {
				held = strings.Join(r.KeptBy, ", ")
			}
			fmt.Fprintf(stdout, "; %d stay on, held by %s", r.Kept, held)
		}
		if r.AlreadyOn > 0 {
			fmt.Fprintf(stdout, "; %d were already on", r.AlreadyOn)
		}
		fmt.Fprintln(stdout)
	}
	return fails.err()
}
