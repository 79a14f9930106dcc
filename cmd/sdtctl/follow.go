package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// sdtctl trace|stat SPEC -- CMD ARGS: the command is started with the request in its
// environment (SDT_FOLLOW, hex of the request's payload); its sdt runtime opens the
// trace or aggregation at the end of sdt's initialisation, before any package that
// fires a probe has run its init, and binds its socket at once (sdt/control's
// follow.go). sdtctl connects and sends the same request, which takes over what was
// opened: what fired before is in the trace's buffers (or folded), or counted dropped.
// The command keeps sdtctl's stdin, stdout and stderr; sdtctl's own output goes where
// it goes without a command.

// splitCommand splits args at the first "--": sdtctl's arguments, and the command.
func splitCommand(args []string) (own, command []string, ok bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return args, nil, false
}

// followed is a command sdtctl started.
type followed struct {
	cmd  *exec.Cmd
	name string
	done chan struct{} // closed once it has exited and been waited for
	err  error         // Wait's
}

// startFollowed starts command with q in its environment and connects to it once it
// has bound its socket. A command that ends first, or is no gosdt program, is waited
// for and said.
func startFollowed(command []string, q *ctlproto.Request, stderr io.Writer) (*followed, *client, error) {
	if len(command) == 0 {
		return nil, nil, fail(exitUsage, "%s: want a command after --", q.Op)
	}
	payload, err := ctlproto.AppendFrame(nil, q)
	if err != nil {
		return nil, nil, fail(exitUsage, "%s: %v", q.Op, err)
	}
	c := exec.Command(command[0], command[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), "SDT_FOLLOW="+hex.EncodeToString(payload[4:]))
	if err := c.Start(); err != nil {
		code := exitError
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = exitNoProcess
		}
		return nil, nil, fail(code, "%s: %v", q.Op, err)
	}
	f := &followed{cmd: c, name: command[0], done: make(chan struct{})}
	go func() {
		f.err = c.Wait()
		close(f.done)
	}()
	pid := c.Process.Pid
	for {
		if p, err := locate(pid); err == nil {
			if _, err := p.find(); err == nil {
				break
			}
		}
		select {
		case <-f.done:
			f.report(stderr)
			return nil, nil, fail(exitNotGosdt, "%s: %s (pid %d) exited without a control socket: not a program that uses gosdt", q.Op, f.name, pid)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cl, err := dial(pid)
	if err != nil {
		return f, nil, err
	}
	noteReturnsOf(pid, append([]string{q.Spec}, q.Specs...), stderr)
	return f, cl, nil
}

// finish waits for the command, says how it ended, and maps the stream's error:
// the command's exit is the end a followed trace expects.
func (f *followed) finish(err error, stdout, stderr io.Writer, asJSON bool) error {
	<-f.done
	if asJSON {
		code, how := f.status()
		printJSON(stdout, map[string]any{"pid": f.cmd.Process.Pid, "command": f.cmd.Args, "status": code, "ended": how})
	} else {
		f.report(stderr)
	}
	if exitCode(err) == exitExited {
		return nil
	}
	return err
}

// status is the command's exit status: its code, or 128+N when signal N ended it.
func (f *followed) status() (int, string) {
	st := f.cmd.ProcessState
	if st == nil {
		return -1, fmt.Sprint(f.err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), "killed by " + ws.Signal().String()
	}
	return st.ExitCode(), fmt.Sprintf("exited with status %d", st.ExitCode())
}

func (f *followed) report(stderr io.Writer) {
	_, how := f.status()
	fmt.Fprintf(stderr, "sdtctl: %s (pid %d) %s\n", strings.Join(f.cmd.Args, " "), f.cmd.Process.Pid, how)
}

// streams returns the connections trace or stat (verb) streams q on: to the command it
// starts (follow, with -- CMD), or to the processes -p or -n name. When there are none
// (the command could not be followed, or no process matched), err is the command's
// result.
func (o *opts) streams(verb string, follow bool, command []string, q *ctlproto.Request, stdout, stderr io.Writer) (cls []*client, cmd *followed, err error) {
	if !follow {
		cls, err = o.targets(false)
		return cls, nil, err
	}
	if o.pid != 0 || o.name != "" {
		return nil, nil, fail(exitUsage, "%s: -p or -n, or -- CMD: one of them", verb)
	}
	f, cl, err := startFollowed(command, q, stderr)
	if cl == nil {
		if f != nil {
			return nil, nil, f.finish(err, stdout, stderr, o.json)
		}
		return nil, nil, err
	}
	return []*client{cl}, f, nil
}
