package main

import (
	"flag"
	"io"
)

// common flags of every command.
type opts struct {
	fs   *flag.FlagSet
	json bool
	pid  int
	name string
}

func newFlags(cmd string, stderr io.Writer, target bool) *opts {
	o := &opts{fs: flag.NewFlagSet("sdtctl "+cmd, flag.ContinueOnError)}
	o.fs.SetOutput(stderr)
	o.fs.BoolVar(&o.json, "json", false, "print JSON, one object per line")
	if target {
		o.fs.IntVar(&o.pid, "p", 0, "the process `PID`")
		o.fs.StringVar(&o.name, "n", "", "the processes whose command is `NAME`")
	}
	return o
}

// parse parses flags anywhere among the arguments and returns the positional ones.
func (o *opts) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := o.fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, errHelp
			}
			return nil, fail(exitUsage, "%v", err)
		}
		args = o.fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
