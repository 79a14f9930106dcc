package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// client is a connection to one process's control server.
type client struct {
	c     net.Conn
	pid   int // in our PID namespace
	nspid int // in the process's own (hello.Pid)
	hello *ctlproto.Response
	rbuf  []byte // frames are read here: a reply is valid until the next recv
	// sigs go with its list, enable, trace and stat requests: the signatures of the
	// functions they place run-time probes on, read from its executable (runtimecost.go)
	sigs []ctlproto.FuncSig
	// fds the process passed (SCM_RIGHTS), in order, until taken (rings)
	fds     []int
	started *ctlproto.Response // the stream's start (stream)
	// onStarted, where set, is called with the start as it comes (a live trace's
	// reader begins then)
	onStarted func(*ctlproto.Response)
}

// dial connects to pid (in our PID namespace) and does the handshake, mapping
// failures to exit codes. The process may run in other namespaces (locate).
func dial(pid int) (*client, error) {
	if pid <= 0 || !alive(pid) {
		return nil, fail(exitNoProcess, "pid %d: no such process", pid)
	}
	p, err := locate(pid)
	if err != nil {
		return nil, err
	}
	waitYoung(p)
	c, path, err := p.connect(5 * time.Second)
	if err != nil {
		switch {
		case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
			return nil, fail(exitPermission, "pid %d: permission denied (%s)%s", pid, path, otherUser(p))
		case errors.Is(err, syscall.ENOENT) && p.hidden != nil && otherUser(p) != "":
			return nil, fail(exitPermission, "pid %d: permission denied: its namespaces are not reachable (%v)%s", pid, p.hidden, otherUser(p))
		case errors.Is(err, syscall.ENOENT) && p.hidden != nil:
			return nil, fail(exitNotGosdt, "pid %d: not a gosdt process (no control socket %s), or one in namespaces that are not reachable (%v)", pid, path, p.hidden)
		case errors.Is(err, syscall.ENOENT):
			return nil, fail(exitNotGosdt, "pid %d: not a gosdt process (no control socket %s)", pid, path)
		case gone(pid):
			return nil, fail(exitExited, "pid %d: process exited", pid)
		}
		return nil, fail(exitNotGosdt, "pid %d: not a gosdt process: %v", pid, err)
	}
	// A process in a child PID namespace that shares our mount namespace names its
	// socket by its own pid, which is another process's here.
	if server := peerPid(c); server != 0 && server != pid {
		c.Close()
		return nil, fail(exitNotGosdt, "pid %d: not a gosdt process (%s is served by pid %d)", pid, path, server)
	}
	return handshake(c, pid)
}

// otherUser says whose a process is when that explains a denial.
func otherUser(p *proc) string {
	if p.uid >= 0 && p.uid != os.Getuid() && os.Getuid() != 0 {
		return fmt.Sprintf(": owned by uid %d, you are uid %d (only the same user or root)", p.uid, os.Getuid())
	}
	return ""
}

// handshake says hello on c, a connection to pid's control server.
func handshake(c net.Conn, pid int) (*client, error) {
	cl := &client{c: c, pid: pid}
	if err := cl.send(&ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version}); err != nil {
		// A server that refuses us says why before it closes: that beats EPIPE.
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, rerr := cl.recv(); exitCode(rerr) == exitPermission {
			err = rerr
		}
		c.Close()
		return nil, err
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
	cl.hello, cl.nspid = r, r.Pid
	return cl, nil
}

// nsNote is what to add to a process's name in listings when its pid in its own
// namespace is not the one it has in ours.
func (cl *client) nsNote() string {
	if cl.nspid != 0 && cl.nspid != cl.pid {
		return fmt.Sprintf(", pid %d in its namespace", cl.nspid)
	}
	return ""
}

// youngest is the age below which a process may still be about to bind its socket:
// it does so 20 ms after its init (sdt/control), later on a loaded machine.
const youngest = time.Second

// waitYoung waits for the socket of a process that is too young to have bound it,
// so that "start a program, then sdtctl -p its pid" works.
func waitYoung(p *proc) {
	for {
		if _, err := p.find(); err == nil {
			return
		}
		a, ok := age(p.pid)
		if !ok || a >= youngest {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (cl *client) close() {
	cl.c.Close()
	for _, fd := range cl.fds {
		closeFd(fd)
	}
	cl.fds = nil
}

// takeFds takes n of the descriptors passed, oldest first; fewer if fewer came.
func (cl *client) takeFds(n int) []int {
	n = min(n, len(cl.fds))
	fds := cl.fds[:n:n]
	cl.fds = cl.fds[n:]
	return fds
}

func (cl *client) send(q *ctlproto.Request) error {
	if len(cl.sigs) > 0 && q.Op != ctlproto.OpHello && q.Op != ctlproto.OpStop && q.Op != ctlproto.OpDisable {
		withSigs := *q
		withSigs.Sigs = cl.sigs
		q = &withSigs
	}
	if err := ctlproto.WriteFrame(cl.c, q); err != nil {
		return cl.connErr(err)
	}
	return nil
}

// recv reads one reply; an error reply becomes an error with its exit code.
func (cl *client) recv() (*ctlproto.Response, error) {
	b, err := ctlproto.ReadFrameInto(cl.reader(), cl.rbuf)
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

// connErr names a failed read or write on the connection. A process that exits
// closes its socket before it is gone (and stays a zombie until its parent waits for
// it): when the peer closed, the process is given a moment to be seen gone.
func (cl *client) connErr(err error) error {
	closed := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	for deadline := time.Now().Add(exitGrace); ; time.Sleep(10 * time.Millisecond) {
		if gone(cl.pid) {
			return fail(exitExited, "pid %d: process exited", cl.pid)
		}
		if !closed || time.Now().After(deadline) {
			break
		}
	}
	if closed {
		return fail(exitError, "pid %d: the process closed the connection (%v)", cl.pid, err)
	}
	return fail(exitError, "pid %d: connection: %v", cl.pid, err)
}

// exitGrace is how long a process whose connection closed may take to be seen gone.
const exitGrace = 3 * time.Second

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
	r, err := cl.recv()
	for err == nil && r.Kind == ctlproto.KindList && r.More {
		var next *ctlproto.Response
		if next, err = cl.recv(); err == nil {
			r.Probes, r.More = append(r.Probes, next.Probes...), next.More
		}
	}
	return r, err
}

// procs lists the gosdt processes whose control server answers, in pid order:
// this user's, and those in other mount or PID namespaces that we may reach (a
// container's), each once. Sockets that no process serves any more are removed (a
// process does not remove its socket when it is killed); our own is skipped.
func procs() []*client {
	conns := map[int]net.Conn{}
	dir := ctlproto.Dir()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n, ok := ctlproto.PidOf(e.Name())
		if !ok || n == os.Getpid() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		c, err := net.DialTimeout("unix", path, 5*time.Second)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				os.Remove(path)
			}
			continue
		}
		// The name is the pid in the server's PID namespace; the kernel tells ours.
		pid := peerPid(c)
		if pid == 0 {
			pid = n
		}
		if pid == os.Getpid() || conns[pid] != nil {
			c.Close()
			continue
		}
		conns[pid] = c
	}
	for _, pid := range append(foreign(), otherUsers()...) {
		if conns[pid] != nil {
			continue
		}
		p, err := locate(pid)
		if err != nil {
			continue
		}
		if _, err := p.find(); err != nil {
			continue
		}
		c, _, err := p.connect(5 * time.Second)
		if err != nil {
			continue
		}
		if server := peerPid(c); server != 0 && server != pid {
			c.Close()
			continue
		}
		conns[pid] = c
	}
	pids := slices.Sorted(maps.Keys(conns))
	var out []*client
	for _, pid := range pids {
		if cl, err := handshake(conns[pid], pid); err == nil {
			out = append(out, cl)
		}
	}
	return out
}

// targets resolves -p / -n: the process -p names, every process -n names, or, with
// neither, every gosdt process when the command can take several (all) and the only
// one otherwise; several are refused with their pids and names.
func (o *opts) targets(all bool) ([]*client, error) {
	if o.set("p") && o.pid <= 0 {
		return nil, fail(exitUsage, "-p %d: want a process id above 0", o.pid)
	}
	if o.pid != 0 && o.name != "" {
		return nil, fail(exitUsage, "-p %d and -n %s: give one of them", o.pid, o.name)
	}
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
			if others := othersNamed(o.name); len(others) > 0 && os.Getuid() != 0 {
				return nil, fail(exitPermission, "no gosdt process of yours named %q; %s: only the same user or root may control a process",
					o.name, joinProcs(others))
			} else if len(others) > 0 {
				return nil, fail(exitNoProcess, "no gosdt process named %q in %s; %s: name it with -p", o.name, ctlproto.Dir(), joinProcs(others))
			}
			return nil, fail(exitNoProcess, "no gosdt process named %q", o.name)
		}
		return keep, nil
	}
	if len(ps) == 0 {
		return nil, fail(exitNoProcess, "no gosdt process of uid %d found (in %s), nor one in another namespace that uid %d may reach", os.Getuid(), ctlproto.Dir(), os.Getuid())
	}
	if !all && len(ps) > 1 {
		var names []string
		for _, cl := range ps {
			names = append(names, fmt.Sprintf("%d (%s)", cl.pid, cl.hello.Command))
			cl.close()
		}
		return nil, fail(exitUsage, "%d gosdt processes: %s: choose one with -p PID, or every process of one name with -n NAME",
			len(ps), strings.Join(names, ", "))
	}
	return ps, nil
}

// otherProc is a process another user owns.
type otherProc struct{ pid, uid int }

// joinProcs says whose processes are: "pid 42 (uid 0), pid 43 (uid 1000)".
func joinProcs(ps []otherProc) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("pid %d (uid %d)", p.pid, p.uid)
	}
	return strings.Join(s, ", ")
}

// failures gathers the errors of a command run on several processes: each is said
// once, the first by main (it is returned, with its exit code), the others on stderr
// as they come.
type failures struct {
	mu     sync.Mutex
	first  error
	stderr io.Writer
}

func (f *failures) add(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == nil {
		f.first = err
		return
	}
	fmt.Fprintln(f.stderr, "sdtctl:", err)
}

func (f *failures) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}
