package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gosdt/gosdt/internal/seal"
)

// cmdSeal seals binaries (package seal says what that writes, and where).
func cmdSeal(args []string, stdout, stderr io.Writer) error {
	o := newFlags("seal", stderr, false)
	out := o.fs.String("o", "", "write the sealed binary to `FILE` instead of rewriting BINARY (one BINARY only): a regular file\n"+
		"is replaced, through symbolic links; a character device or /dev/stdout is written as a stream; - is stdout")
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fail(exitUsage, "seal: no BINARY")
	}
	if *out != "" && len(pos) > 1 {
		return fail(exitUsage, "seal: -o takes one BINARY")
	}
	// -o's file is checked before anything is read or sealed (seal.File checks it again,
	// as it checks the BINARY it rewrites in place).
	if _, err := resolveOutputs("seal", map[string]string{"o": *out}); err != nil {
		return err
	}
	for _, in := range pos {
		dst := in
		if *out != "" {
			dst = *out
		}
		if err := checkELF(in); err != nil {
			return err
		}
		var r *seal.Report
		if dst == "-" {
			r, err = seal.Write(in, stdout)
		} else {
			r, err = seal.File(in, dst)
		}
		if errors.Is(err, seal.ErrNoGosdt) {
			return fail(exitNotGosdt, "%v", err)
		}
		if err != nil {
			return fail(exitError, "%v", err)
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(stderr, "sdtctl: seal: %s\n", w)
		}
		// The report goes where the binary does not: a stream may be stdout.
		w := stdout
		if r.Streamed {
			w = stderr
		}
		if o.json {
			printJSON(w, r)
			continue
		}
		if r.Already {
			fmt.Fprintf(w, "%s: already sealed, left as it is\n", in)
			continue
		}
		fmt.Fprintf(w, "%s: sealed %d of %s; USDT: %s for %s\n", dst, r.Sealed, plural(r.Sites, "site"), plural(r.Notes, "note"), plural(r.Probes, "probe"))
		for _, s := range r.Skipped {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	return nil
}

// sealToolID is added to the linker's version line (go build asks every tool for it
// with -V=full), so that the go command's cache tells sealed links from others.
const sealToolID = "sdtctl-seal/1"

const toolexecUsage = `usage: go build -toolexec 'sdtctl toolexec [-rules FILE]' ...
       sdtctl toolexec [-rules FILE] TOOL ARGS...

Runs the go command's TOOL ARGS... and seals what the linker writes (programs using
gosdt). -rules FILE: the functions FILE names get fbt probes as they are compiled
(fbt:PKG:FUNC:entry and :return): one pattern a line, package/path.Function,
package/path.(*Type).Method, package/path.Type.Method or package/path.*, * the only
wildcard; # starts a comment.

Flags:
  -rules FILE
    	give the functions FILE names fbt probes (first, before TOOL)
`

// cmdToolexec runs a tool of the go command (go build -toolexec "sdtctl toolexec") and
// seals what the linker writes. Other tools run untouched; a link of a program that
// does not use gosdt, or has no site (-cover, -N -l), is not sealed.
func cmdToolexec(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		return &helpError{toolexecUsage}
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, toolexecUsage)
		return fail(exitUsage, "toolexec: no tool")
	}
	rules, args, err := rulesFlag(args)
	if err != nil {
		return err
	}
	tool, targs := args[0], args[1:]
	toolName := strings.TrimSuffix(filepath.Base(tool), ".exe")
	isLink := toolName == "link"
	isVersion := len(targs) == 1 && strings.HasPrefix(targs[0], "-V")
	var extraID string
	if rules != nil && !isVersion {
		var cleanup func()
		if targs, cleanup, err = rulesRewrite(rules, tool, toolName, targs, stderr); err != nil {
			return err
		}
		defer cleanup()
	} else if rules != nil && toolName == "compile" {
		extraID = rules.ToolID()
	}
	cmd := exec.Command(tool, targs...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	var version bytes.Buffer
	if (isLink || extraID != "") && isVersion {
		cmd.Stdout = &version
	}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fail(ee.ExitCode(), "") // the tool said why
		}
		return fail(exitError, "toolexec: %v", err)
	}
	if version.Len() > 0 && extraID != "" {
		fmt.Fprintf(stdout, "%s %s\n", strings.TrimSpace(version.String()), extraID)
		return nil
	}
	if version.Len() > 0 {
		fmt.Fprintf(stdout, "%s %s\n", strings.TrimSpace(version.String()), sealToolID)
		return nil
	}
	if !isLink {
		return nil
	}
	out := linkOutput(targs)
	if out == "" {
		return nil
	}
	r, err := seal.File(out, out)
	if err != nil && !errors.Is(err, seal.ErrNoGosdt) && !errors.Is(err, seal.ErrNoSites) {
		return fail(exitError, "toolexec: sealing the linker's output: %v", err)
	}
	if err == nil {
		for _, w := range r.Warnings {
			fmt.Fprintf(stderr, "sdtctl: toolexec: sealing %s: %s\n", out, w)
		}
	}
	return nil
}

// linkOutput is the -o argument of a link command line.
func linkOutput(args []string) string {
	for i, a := range args {
		switch {
		case a == "-o" && i+1 < len(args):
			return args[i+1]
		case strings.HasPrefix(a, "-o="):
			return a[len("-o="):]
		}
	}
	return ""
}
