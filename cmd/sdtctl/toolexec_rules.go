package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/gosdt/gosdt/internal/fbt"
)

// rulesFlag takes `-rules FILE` off the front of toolexec's arguments: the functions
// that FILE names are given fbt probes as they are compiled (package fbt).
func rulesFlag(args []string) (*fbt.Tool, []string, error) {
	if len(args) == 0 || args[0] != "-rules" && args[0] != "--rules" {
		return nil, args, nil
	}
	if len(args) < 3 {
		return nil, nil, fail(exitUsage, "toolexec: -rules FILE TOOL ARGS...")
	}
	t, err := fbt.Load(args[1])
	if err != nil {
		var re *fbt.RuleError
		if errors.As(err, &re) {
			return nil, nil, fail(exitUsage, "toolexec: rules file: %v", err)
		}
		return nil, nil, fail(exitUsage, "toolexec: %v", err)
	}
	return t, args[2:], nil
}

// rulesRewrite gives the compiler the rewritten files and both the compiler and the
// linker an import config that has package sdt; other tools run as they are.
func rulesRewrite(t *fbt.Tool, path, tool string, args []string, stderr io.Writer) ([]string, func(), error) {
	warn := func(s string) { fmt.Fprintln(stderr, s) }
	var out []string
	var cleanup func()
	var err error
	switch tool {
	case "compile":
		out, cleanup, err = t.Compile(path, args, warn)
	case "link":
		out, cleanup, err = t.Link(args, warn)
	default:
		return args, func() {}, nil
	}
	if err != nil {
		return nil, nil, fail(exitError, "toolexec: %v", err)
	}
	return out, cleanup, nil
}
