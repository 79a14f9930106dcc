package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// client is a connection to one process's control server.
type client struct {
	c     net.Conn
	pid   int
	hello *ctlproto.Response
	rbuf  []byte // frames are read here: a reply is valid until the next recv
}

// socketFor finds pid's socket: in our directory, else (for root) in the directory
// of the user who owns pid.
func socketFor(pid int) string {
	path := ctlproto.SocketPath(pid)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if uid, ok := ownerOf(pid); ok && uid != os.Getuid() {
		for _, d := range []string{fmt.Sprintf("/run/user/%d/gosdt", uid), filepath.Join(os.TempDir(), fmt.Sprintf("gosdt-%d", uid))} {
			p := filepath.Join(d, strconv.Itoa(pid)+".sock")
			if _, err := os.Lstat(p); err == nil {
				return p
			}
		}
	}
	return path
}

// dial connects to pid and does the handshake, mapping failures to exit codes.
func dial(pid int) (*client, error) {
	if pid <= 0 || !alive(pid) {
		return nil, fail(exitNoProcess, "pid %d: no such process", pid)
	}
	path := socketFor(pid)
	waitYoung(pid, path)
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		switch {
		case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
			return nil, fail(exitPermission, "pid %d: permission denied (%s)", pid, path)
		case errors.Is(err, syscall.ENOENT):
			return nil, fail(exitNotGosdt, "pid %d: not a gosdt process (no control socket %s)", pid, path)
		case !alive(pid):
			return nil, fail(exitExited, "pid %d: process exited", pid)
		}
		return nil, fail(exitNotGosdt, "pid %d: not a gosdt process: %v", pid, err)
	}
	cl := &client{c: c, pid: pid}
	if err := cl.send(&ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version}); err != nil {
		c.Close()
		return nil, cl.connErr(err)
	}
	r, err := cl.recv()
	if err != nil {
		c.Close()
		return nil, err
	}
	if r.Kind != ctlproto.KindHello {
		c.Close()
		return nil, fail(exitError, "pid %d: unexpected %s reply to hello", pid, r.Kind)
	}
	cl.hello = r
	return cl, nil
}

// youngest is the age below which a process may still be about to bind its socket:
// it does so 20 ms after its init (sdt/control), later on a loaded machine.
const youngest = time.Second

// waitYoung waits for the socket of a process that is too young to have bound it,
// so that "start a program, then sdtctl -p its pid" works.
func waitYoung(pid int, path string) {
	for {
		if _, err := os.Lstat(path); err == nil {
			return
		}
		a, ok := age(pid)
		if !ok || a >= youngest {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (cl *client) close() { cl.c.Close() }

func (cl *client) send(q *ctlproto.Request) error {
	if err := ctlproto.WriteFrame(cl.c, q); err != nil {
		return cl.connErr(err)
	}
	return nil
}

// recv reads one reply; an error reply becomes an error with its exit code.
func (cl *client) recv() (*ctlproto.Response, error) {
	b, err := ctlproto.ReadFrameInto(cl.c, cl.rbuf)
	if err != nil {
		return nil, cl.connErr(err)
	}
	if cap(b) > cap(cl.rbuf) {
		cl.rbuf = b[:cap(b)]
	}
	r, err := ctlproto.DecodeResponse(b)
	if err != nil {
		return nil, fail(exitError, "pid %d: %v", cl.pid, err)
	}
	if err := r.Err(); err != nil {
		return nil, protoErr(cl.pid, err.(*ctlproto.Error))
	}
	return r, nil
}

func (cl *client) connErr(err error) error {
	if !alive(cl.pid) {
		return fail(exitExited, "pid %d: process exited", cl.pid)
	}
	return fail(exitError, "pid %d: connection: %v", cl.pid, err)
}

func protoErr(pid int, e *ctlproto.Error) error {
	code := exitError
	switch e.Code {
	case ctlproto.CodeBadSpec:
		code = exitBadSpec
		return fail(code, "%s", e.Message)
	case ctlproto.CodeNoMatch:
		code = exitNoMatch
	case ctlproto.CodePermission:
		code = exitPermission
		return fail(code, "pid %d: permission denied: %s", pid, e.Message)
	case ctlproto.CodeBadRequest:
		code = exitUsage
	}
	return fail(code, "pid %d: %s", pid, e.Message)
}

// call sends a request and reads its one reply.
func (cl *client) call(q *ctlproto.Request) (*ctlproto.Response, error) {
	if err := cl.send(q); err != nil {
		return nil, err
	}
	return cl.recv()
}

// procs lists the gosdt processes of this user whose control server answers, in pid
// order. Sockets of dead processes are removed (a process does not remove its socket
// when it is killed); our own is skipped.
func procs() []*client {
	dir := ctlproto.Dir()
	ents, _ := os.ReadDir(dir)
	var pids []int
	for _, e := range ents {
		pid, ok := ctlproto.PidOf(e.Name())
		switch {
		case !ok || pid == os.Getpid():
		case alive(pid):
			pids = append(pids, pid)
		default:
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	sort.Ints(pids)
	var out []*client
	for _, pid := range pids {
		if cl, err := dial(pid); err == nil {
			out = append(out, cl)
		}
	}
	return out
}

// targets resolves -p / -n, or every process when all and neither is given.
func (o *opts) targets(all bool) ([]*client, error) {
	if o.pid != 0 {
		cl, err := dial(o.pid)
		if err != nil {
			return nil, err
		}
		return []*client{cl}, nil
	}
	ps := procs()
	if o.name != "" {
		var keep []*client
		for _, cl := range ps {
			if cl.hello.Command == o.name {
				keep = append(keep, cl)
			} else {
				cl.close()
			}
		}
		if len(keep) == 0 {
			return nil, fail(exitNoProcess, "no gosdt process named %q", o.name)
		}
		return keep, nil
	}
	if len(ps) == 0 {
		return nil, fail(exitNoProcess, "no gosdt process of uid %d found (in %s)", os.Getuid(), ctlproto.Dir())
	}
	if !all && len(ps) > 1 {
		var pids []int
		for _, cl := range ps {
			pids = append(pids, cl.pid)
			cl.close()
		}
		return nil, fail(exitUsage, "%d gosdt processes (%v): choose one with -p", len(ps), pids)
	}
	return ps, nil
}
