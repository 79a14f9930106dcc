package ctlserver

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/consume"
	"github.com/gosdt/gosdt/sdt/internal/rt"
	"golang.org/x/sys/unix"
)

// The control socket: $XDG_RUNTIME_DIR/gosdt/<pid>.sock or /tmp/gosdt-<uid>/<pid>.sock,
// in a directory of mode 0700 that must belong to us; peers are checked with
// SO_PEERCRED (permitted: also from outside our user namespace). It is made with
// raw system calls and served through os.File, whose descriptors wait in the
// runtime's network poller: no package net, and an idle server is one goroutine
// parked in the poller, no thread.

var server struct {
	sync.Mutex
	ln      *os.File    // the listening socket; nil when not serving
	pending *time.Timer // the automatic Serve, armed at start (start.go)
	stopped bool        // Stop was called: no automatic Serve
	path    string
	warned  map[uint32]bool // uids refused, logged once each
	limit   int32           // the most connections served at once (connLimit)
}

// conns counts the connections being served.
var conns atomic.Int32

// maxConns is the most connections served at once. sdtctl makes one per command,
// for the command's time; more are refused with a "busy" error.
const maxConns = 64

// connLimit is maxConns, or a quarter of the descriptors the process may open
// (RLIMIT_NOFILE) when that is fewer: whatever connects, the server holds no more
// descriptors than that (and one more for a moment, to answer busy), and the
// program keeps the rest for its own work.
func connLimit() int32 {
	var rl syscall.Rlimit // syscall's, which package os links already; not x/sys's copy
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur/4 < maxConns {
		return int32(max(rl.Cur/4, 1))
	}
	return maxConns
}

// arm schedules the automatic Serve (start.go).
func arm() {
	server.Lock()
	defer server.Unlock()
	if server.ln == nil && server.pending == nil && !server.stopped {
		server.pending = time.AfterFunc(startDelay, autoServe)
	}
}

// autoServe is the automatic Serve, unless Stop or Serve came first.
func autoServe() {
	server.Lock()
	defer server.Unlock()
	if server.pending == nil {
		return
	}
	server.pending = nil
	if err := serveLocked(); err != nil {
		consume.Warnf("control server not started: %v", err)
	}
}

// Serve makes this process reachable by sdtctl now: it binds the control socket
// and serves it, if it does not already. Without it, sdt's initialisation has it
// done 20 ms later, unless SDT_CONTROL=off.
func Serve() error {
	server.Lock()
	defer server.Unlock()
	return serveLocked()
}

func serveLocked() error {
	server.stopped = false
	if server.pending != nil {
		server.pending.Stop()
		server.pending = nil
	}
	if server.ln != nil {
		return nil
	}
	if err := consume.Started(); err != nil {
		return err
	}
	dir, err := controlDir()
	if err != nil {
		return err
	}
	path := ctlproto.InDir(dir, strconv.Itoa(os.Getpid())+".sock")
	ln, err := listen(path)
	if err != nil {
		return err
	}
	server.ln, server.path, server.limit = ln, path, connLimit()
	if server.warned == nil {
		server.warned = map[uint32]bool{}
	}
	go accept(ln, dir, server.limit)
	return nil
}

// Stop stops serving sdtctl and removes the socket, until Serve; clients connected
// keep their connections. A program that must not be controlled calls it first thing
// in main (then it never binds), or is started with SDT_CONTROL=off.
func Stop() {
	server.Lock()
	defer server.Unlock()
	server.stopped = true
	if server.pending != nil {
		server.pending.Stop()
		server.pending = nil
	}
	if server.ln != nil {
		server.ln.Close()
		unix.Unlink(server.path)
		server.ln = nil
	}
}

// Socket is the path of this process's control socket, "" while it serves none.
func Socket() string {
	server.Lock()
	defer server.Unlock()
	if server.ln == nil {
		return ""
	}
	return server.path
}

// controlDir creates (or checks) the socket directory.
func controlDir() (string, error) {
	dir := ctlproto.Dir()
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return "", fmt.Errorf("%s is not a directory", dir)
	case int(st.Uid) != os.Getuid():
		return "", fmt.Errorf("%s is not owned by uid %d", dir, os.Getuid())
	case st.Mode&0o077 != 0:
		return "", fmt.Errorf("%s has mode %#o: group or others may use it", dir, st.Mode&0o777)
	}
	return dir, nil
}

// listen binds a non-blocking unix stream socket at path (replacing a stale socket of
// an earlier process with our pid) and listens on it. It binds a temporary name and
// renames it to path once listening: a client that sees path can connect (a client
// that found it between bind and listen was refused).
func listen(path string) (*os.File, error) {
	if len(path)+4 >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, fmt.Errorf("socket path %s: longer than a unix socket address allows", path)
	}
	tmp := path + ".new"
	unix.Unlink(tmp)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: tmp}); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "bind", Path: tmp, Err: err}
	}
	if err := unix.Listen(fd, 64); err != nil {
		unix.Close(fd)
		unix.Unlink(tmp)
		return nil, os.NewSyscallError("listen", err)
	}
	if err := unix.Rename(tmp, path); err != nil {
		unix.Close(fd)
		unix.Unlink(tmp)
		return nil, &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// accept4 accepts a connection on the listening socket fd, non-blocking and
// close-on-exec, without its peer's address: unix.Accept4 decodes the address into a
// Sockaddr, which links the decoding of every address family, their types and methods
// (about 40 KB of every traced program) for a peer known only by its credentials.
func accept4(fd uintptr) (int, error) {
	nfd, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, fd, 0, 0, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(nfd), nil
}

// accept serves each connection on its own goroutine, until ln is closed; dir is
// the socket's directory, limit the most connections served at once.
func accept(ln *os.File, dir string, limit int32) {
	rc, err := ln.SyscallConn()
	if err != nil {
		consume.Warnf("accept: %v", err)
		return
	}
	var pause time.Duration // after a failed accept
	var warned int64        // nanotime when refusals were last said
	for {
		nfd := -1
		var aerr error
		if err := rc.Read(func(fd uintptr) bool {
			nfd, aerr = accept4(fd)
			return aerr != unix.EAGAIN
		}); err != nil {
			return // closed by Stop
		}
		switch aerr {
		case nil:
			pause = 0
		case unix.EINTR, unix.ECONNABORTED:
			continue
		default:
			// Out of descriptors or memory: the program's own work, not ours, is
			// short of them. Do not spin, and do not fill its stderr: wait longer
			// each time, up to a second, and say it once; the client waits in the
			// backlog.
			if pause == 0 {
				consume.Warnf("accept: %v; waiting", aerr)
			}
			pause = min(max(2*pause, 10*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		cred, err := unix.GetsockoptUcred(nfd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		c := os.NewFile(uintptr(nfd), "sdtctl")
		if err != nil {
			c.Close()
			continue
		}
		if !permitted(c, cred, dir) {
			continue // refused, and closed
		}
		if conns.Add(1) > limit {
			conns.Add(-1)
			if now := rt.Nanotime(); warned == 0 || now-warned > int64(time.Minute) {
				warned = now
				consume.Warnf("refusing sdtctl connections: %d served, the most at once", limit)
			}
			refuse(c, ctlproto.Errorf(ctlproto.CodeBusy, "pid %d serves %d sdtctl connections, the most it serves at once; try again later", os.Getpid(), limit))
			continue
		}
		go func() {
			defer conns.Add(-1)
			serve(socketConn{c}, fmt.Sprintf("sdtctl pid %d", cred.Pid))
		}()
	}
}

// refuse answers a connection with err and closes it. The answer is one small
// frame, which a new connection's socket buffer takes whole: the deadline is only
// in case.
func refuse(c *os.File, err error) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	ctlproto.WriteFrame(c, ctlproto.ErrorResponse(err))
	c.Close()
}

// permitted checks the peer's uid, which the kernel translated into our user
// namespace: ours, or root of our namespace (a root or the same uid outside it that
// maps to those, too). In a nested user namespace, a peer whose uid has no mapping
// here (root of the host reaching into a container that a user made) arrives as the
// overflow uid (65534): it is let in while our directory is still ours and 0700, for
// a peer that is not our uid came through it only with a capability over our uid
// (CAP_DAC_OVERRIDE). Anyone else is refused.
// A refused uid is told why (and its connection closed), and logged once.
func permitted(c *os.File, cred *unix.Ucred, dir string) bool {
	if cred.Uid == 0 || int(cred.Uid) == os.Getuid() || cred.Uid == overflowUID() && private(dir) {
		return true
	}
	server.Lock()
	first := !server.warned[cred.Uid]
	server.warned[cred.Uid] = true
	server.Unlock()
	if first {
		consume.Warnf("refused a client with uid %d (pid %d): only uid %d or root", cred.Uid, cred.Pid, os.Getuid())
	}
	why := ""
	if cred.Uid == overflowUID() {
		why = fmt.Sprintf("; a uid of an enclosing user namespace is let in only while %s is private", dir)
	}
	refuse(c, ctlproto.Errorf(ctlproto.CodePermission,
		"uid %d may not control pid %d (owned by uid %d%s)", cred.Uid, os.Getpid(), os.Getuid(), why))
	return false
}

// socketConn is an accepted connection, as serve reads and writes it.
type socketConn struct{ f *os.File }

func (s socketConn) Read(p []byte) (int, error)  { return s.f.Read(p) }
func (s socketConn) Write(p []byte) (int, error) { return s.f.Write(p) }
func (s socketConn) Close() error                { return s.f.Close() }

func (s socketConn) setWriteTimeout(d time.Duration) { s.f.SetWriteDeadline(time.Now().Add(d)) }

// asciiFields is strings.Fields for the kernel's /proc files, which are ASCII: not
// strings.Fields, TrimSpace or Trim, whose Unicode white space and UTF-8 search every
// traced program would link for these two reads.
func asciiFields(s string) []string {
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
	var out []string
	for {
		for s != "" && space(s[0]) {
			s = s[1:]
		}
		if s == "" {
			return out
		}
		i := 0
		for i < len(s) && !space(s[i]) {
			i++
		}
		out, s = append(out, s[:i]), s[i:]
	}
}

// overflowUID is the uid the kernel reports for a uid without a mapping in our user
// namespace; in the initial namespace, which maps every uid, no uid (-1).
var overflowUID = sync.OnceValue(func() uint32 {
	if m, err := consume.ReadProc("/proc/self/uid_map"); err != nil || strings.Join(asciiFields(string(m)), " ") == "0 0 4294967295" {
		return ^uint32(0)
	}
	b, err := consume.ReadProc("/proc/sys/kernel/overflowuid")
	if f := asciiFields(string(b)); err == nil && len(f) == 1 {
		if n, err := strconv.ParseUint(f[0], 10, 32); err == nil {
			return uint32(n)
		}
	}
	return 65534
})

// private reports whether dir is still our directory of mode 0700, as controlDir
// made sure when we bound the socket in it.
func private(dir string) bool {
	var st unix.Stat_t
	return unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR &&
		int(st.Uid) == os.Getuid() && st.Mode&0o077 == 0
}

// sendFds writes b with fds attached (SCM_RIGHTS), at most 64 to a message (a
// reader's room for them), each message one byte of b but the last.
func (s socketConn) sendFds(b []byte, fds []int) error {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return err
	}
	for len(fds) > 0 {
		k := min(len(fds), 64)
		part := b
		if k < len(fds) {
			part = b[:1]
		}
		var n int
		var serr error
		werr := rc.Write(func(fd uintptr) bool {
			n, serr = unix.SendmsgN(int(fd), part, unix.UnixRights(fds[:k]...), nil, unix.MSG_NOSIGNAL)
			return serr != unix.EAGAIN
		})
		if werr != nil {
			return werr
		}
		if serr != nil {
			return serr
		}
		fds, b = fds[k:], b[n:]
	}
	if len(b) > 0 {
		_, err = s.f.Write(b)
	}
	return err
}
