package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"strings"
)

// common flags of every command.
type opts struct {
	fs   *flag.FlagSet
	cmd  string
	json bool
	pid  int
	name string
	// detach is --detach of trace and stat with -- CMD (follow.go).
	detach bool
}

func newFlags(cmd string, stderr io.Writer, target bool) *opts {
	o := newOpts(cmd)
	o.fs.BoolVar(&o.json, "json", false, "print JSON, one object per line")
	if target {
		o.fs.IntVar(&o.pid, "p", 0, "the process `PID`")
		o.fs.StringVar(&o.name, "n", "", "the processes whose command is `NAME`")
	}
	return o
}

// newOpts is a command's flag set without the common flags. The flag package prints
// nothing: a bad flag is an error main says once, and --help is text run prints on
// stdout (helpError).
func newOpts(cmd string) *opts {
	o := &opts{fs: flag.NewFlagSet("sdtctl "+cmd, flag.ContinueOnError), cmd: cmd}
	o.fs.SetOutput(io.Discard)
	o.fs.Usage = func() {
		fmt.Fprintf(o.fs.Output(), "usage: sdtctl %s\n\nFlags:\n", synopsis(cmd))
		o.fs.PrintDefaults()
	}
	return o
}

// synopsis is the command's lines in the usage text, up to its description.
func synopsis(cmd string) string {
	// "  cmd ARGS   description": the synopsis ends at the column's spaces
	cut := func(l string) string {
		l = strings.TrimSpace(l)
		name, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		if i := strings.Index(rest, "  "); i >= 0 {
			rest = rest[:i]
		}
		return strings.TrimSpace(name + " " + strings.TrimSpace(rest))
	}
	var lines []string
	for _, l := range strings.Split(usage, "\n") {
		switch {
		case len(lines) == 0 && strings.HasPrefix(l, "  "+cmd+" "):
			lines = append(lines, cut(l))
		case len(lines) > 0 && strings.HasPrefix(l, "       [") && !strings.HasPrefix(strings.TrimSpace(l), "[a-"):
			lines = append(lines, "  "+cut(l)) // a continued synopsis
		case len(lines) > 0:
			return strings.Join(lines, "\n")
		}
	}
	return cmd + " [flags]"
}

// parse parses flags anywhere among the arguments and returns the positional ones.
func (o *opts) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := o.fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, o.help()
			}
			return nil, fail(exitUsage, "%s: %v (sdtctl %s --help lists its flags)", o.cmd, err, o.cmd)
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

// help is the command's --help: its usage and flags.
func (o *opts) help() error {
	var b bytes.Buffer
	o.fs.SetOutput(&b)
	o.fs.Usage()
	o.fs.SetOutput(io.Discard)
	return &helpError{b.String()}
}

// set reports whether the flag name was given.
func (o *opts) set(name string) bool {
	found := false
	o.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// helpError is --help: its text goes to stdout and sdtctl exits 0.
type helpError struct{ text string }

func (e *helpError) Error() string        { return "help" }
func (e *helpError) Is(target error) bool { return target == errHelp }
