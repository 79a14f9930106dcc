package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
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

// A followed command ends sdtctl's run, and sdtctl never outlives it but by --detach,
// as perf record and timeout do: SIGINT and SIGTERM sdtctl receives are passed on to
// the command (a second one kills it), and sdtctl goes on tracing until the command
// has ended, then says how it ended; when the trace ends first (-c, -d, an error),
// the command is sent SIGTERM and, killGrace later, SIGKILL, unless --detach leaves it
// running.

// killGrace is how long a command is given to end after SIGTERM before SIGKILL.
const killGrace = 5 * time.Second

// followed is a command sdtctl started.
type followed struct {
	cmd    *exec.Cmd
	name   string
	detach bool          // --detach: left running when the trace ends first
	done   chan struct{} // closed once it has exited and been waited for
	err    error         // Wait's
	// sawEnd: the stream saw the command end (its connection closed as it died),
	// which its wait follows by a moment: finish waits for it rather than take the
	// stream's end for the trace's own.
	sawEnd bool
}

// detachFlag adds --detach to trace and stat.
func (o *opts) detachFlag() {
	o.fs.BoolVar(&o.detach, "detach", false, "with -- CMD: leave CMD running when the trace ends first (-c, -d); by default it is sent SIGTERM, then SIGKILL")
}

// startFollowed starts command with q in its environment and connects to it once it
// has bound its socket. A command that ends first, or is no gosdt program, is waited
// for and said.
func startFollowed(verb string, command []string, q *ctlproto.Request, detach bool, stderr io.Writer) (*followed, *client, error) {
	if len(command) == 0 {
		return nil, nil, fail(exitUsage, "%s: want a command after --", verb)
	}
	if path, err := exec.LookPath(command[0]); err == nil {
		fq := *q
		followSigs(&fq, path)
		q = &fq
	}
	payload, err := ctlproto.AppendFrame(nil, q)
	if err != nil {
		return nil, nil, fail(exitUsage, "%s: %v", q.Op, err)
	}
	c := exec.Command(command[0], command[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), "SDT_FOLLOW="+hex.EncodeToString(payload[4:]))
	// Listening before the start: a signal that comes while the command starts is
	// passed on too, not the end of sdtctl alone.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	started := socketClock()
	if err := c.Start(); err != nil {
		signal.Stop(sigs)
		return nil, nil, fail(exitStart, "%s: cannot start %s: %v", verb, command[0], errors.Unwrap(err))
	}
	f := &followed{cmd: c, name: command[0], detach: detach, done: make(chan struct{})}
	go func() {
		f.err = c.Wait()
		close(f.done)
	}()
	go f.forward(sigs, stderr)
	pid := c.Process.Pid
	for {
		if p, err := locate(pid); err == nil {
			// A socket older than the command is a killed process's, whose pid the
			// kernel gave the command: the command replaces it when it binds.
			if shown, err := p.find(); err == nil && !staleSocket(shown, started) {
				break
			}
		}
		select {
		case <-f.done:
			f.report(stderr)
			return nil, nil, fail(exitNotGosdt, "%s: %s (pid %d) exited without a control socket: not a program that uses gosdt", verb, f.name, pid)
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
	if f.sawEnd || exitCode(err) == exitExited {
		// The stream saw the process end: its wait is a moment away.
		select {
		case <-f.done:
		case <-time.After(killGrace):
		}
	}
	select {
	case <-f.done:
	default:
		if f.detach {
			fmt.Fprintf(stderr, "sdtctl: %s (pid %d) left running (--detach)\n", strings.Join(f.cmd.Args, " "), f.cmd.Process.Pid)
			if asJSON {
				printJSON(stdout, map[string]any{"pid": f.cmd.Process.Pid, "command": f.cmd.Args, "detached": true})
			}
			return passExited(err)
		}
		f.end(stderr)
	}
	if asJSON {
		code, how := f.status()
		printJSON(stdout, map[string]any{"pid": f.cmd.Process.Pid, "command": f.cmd.Args, "status": code, "ended": how})
	} else {
		f.report(stderr)
	}
	return passExited(err)
}

// passExited maps a stream's error for a followed command: its exit is the end
// expected.
func passExited(err error) error {
	if exitCode(err) == exitExited {
		return nil
	}
	return err
}

// forward passes the signals sdtctl receives on to the command until it has ended:
// the first as it came, any later one as SIGKILL.
func (f *followed) forward(sigs chan os.Signal, stderr io.Writer) {
	defer signal.Stop(sigs)
	pid := f.cmd.Process.Pid
	for n := 0; ; n++ {
		select {
		case <-f.done:
			return
		case sig := <-sigs:
			if n == 0 {
				fmt.Fprintf(stderr, "sdtctl: %v: passed on to %s (pid %d); waiting for it to end (again: kill it)\n", sig, f.name, pid)
				f.cmd.Process.Signal(sig)
			} else {
				fmt.Fprintf(stderr, "sdtctl: %v again: killing %s (pid %d)\n", sig, f.name, pid)
				f.cmd.Process.Kill()
			}
		}
	}
}

// end ends the command once the trace has ended before it: SIGTERM, then SIGKILL
// after killGrace.
func (f *followed) end(stderr io.Writer) {
	fmt.Fprintf(stderr, "sdtctl: the trace ended before %s (pid %d): terminating it (--detach leaves it running)\n", f.name, f.cmd.Process.Pid)
	f.cmd.Process.Signal(terminate)
	select {
	case <-f.done:
		return
	case <-time.After(killGrace):
	}
	fmt.Fprintf(stderr, "sdtctl: %s (pid %d) still running %v after SIGTERM: killing it\n", f.name, f.cmd.Process.Pid, killGrace)
	f.cmd.Process.Kill()
	<-f.done
}

// status is the command's exit status: its code, or 128+N when signal N ended it.
func (f *followed) status() (int, string) {
	st := f.cmd.ProcessState
	if st == nil {
		return -1, fmt.Sprint(f.err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), fmt.Sprintf("killed by signal %v (%d)", ws.Signal(), int(ws.Signal()))
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
		if o.detach {
			return nil, nil, fail(exitUsage, "%s: --detach is for a command started with -- CMD", verb)
		}
		cls, err = o.targets(false)
		return cls, nil, err
	}
	if o.pid != 0 || o.name != "" {
		return nil, nil, fail(exitUsage, "%s: -p or -n, or -- CMD: one of them", verb)
	}
	f, cl, err := startFollowed(verb, command, q, o.detach, stderr)
	if cl == nil {
		if f != nil {
			return nil, nil, f.finish(err, stdout, stderr, o.json)
		}
		return nil, nil, err
	}
	return []*client{cl}, f, nil
}
