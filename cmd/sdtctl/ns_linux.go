package main

// Finding a process's control socket from /proc, also when the process runs in
// other mount, PID and user namespaces (a container): its socket is then reached
// under /proc/PID/root, named by the pid it has in its own namespace (NSpid), in
// the directory its own environment chose. The system calls of sdtctl are here.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"golang.org/x/sys/unix"
)

// proc is where one process's control socket is.
type proc struct {
	pid   int      // in our PID namespace: what -p takes
	nspid int      // in its own PID namespace: its socket's name
	uid   int      // its real uid, as our user namespace sees it
	root  string   // /proc/PID/root when it has another mount namespace, else ""
	dirs  []string // socket directories to look in, as the process sees its file system
	// hidden is why /proc/PID/ns is closed to us (ptrace's access check): another
	// user's process, or one with capabilities we lack.
	hidden error
}

// locate reads pid's namespaces, ids and environment from /proc.
func locate(pid int) (*proc, error) {
	base := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(base + "/status")
	if err != nil {
		if alive(pid) {
			// hidepid: /proc shows only our own processes
			return nil, fail(exitPermission, "pid %d: permission denied: %s not readable (another user's process)", pid, base)
		}
		return nil, fail(exitNoProcess, "pid %d: no such process", pid)
	}
	p := &proc{pid: pid, nspid: pid, uid: -1}
	for line := range bytes.Lines(status) {
		k, v, _ := bytes.Cut(bytes.TrimSpace(line), []byte(":"))
		f := strings.Fields(string(v))
		switch {
		case len(f) == 0:
		case string(k) == "Uid":
			p.uid, _ = strconv.Atoi(f[0])
		case string(k) == "NSpid":
			// from the namespace of our /proc to the process's own: the last is its own
			p.nspid, _ = strconv.Atoi(f[len(f)-1])
		}
	}
	// Not reachable (a process with capabilities we lack, a security module): it
	// may still be in our mount namespace, with a socket we may reach.
	mnt, err := sameNS(pid, "mnt")
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ESRCH) {
		return nil, fail(exitExited, "pid %d: process exited", pid)
	}
	p.hidden = err
	if err == nil && !mnt {
		p.root = base + "/root"
	}
	nsuid := p.uid
	if user, err := sameNS(pid, "user"); err == nil && !user {
		nsuid = mapUID(base+"/uid_map", p.uid)
	}
	// What ctlproto.Dir computes in the process: $XDG_RUNTIME_DIR/gosdt, else
	// $TMPDIR (os.TempDir) or /tmp, then gosdt-<its uid>. Without its environment
	// (not readable; or changed since exec, which /proc does not show) the usual places.
	env := environ(base + "/environ")
	tmp := "/tmp"
	if d := env["TMPDIR"]; d != "" {
		tmp = d
	}
	if d := env["XDG_RUNTIME_DIR"]; d != "" {
		p.dirs = append(p.dirs, filepath.Join(d, "gosdt"))
	}
	if nsuid >= 0 {
		p.dirs = append(p.dirs, filepath.Join(tmp, "gosdt-"+strconv.Itoa(nsuid)))
		if tmp != "/tmp" {
			p.dirs = append(p.dirs, "/tmp/gosdt-"+strconv.Itoa(nsuid))
		}
		if env["XDG_RUNTIME_DIR"] == "" {
			p.dirs = append(p.dirs, fmt.Sprintf("/run/user/%d/gosdt", nsuid))
		}
	}
	if d := ctlproto.Dir(); p.root == "" && !slices.Contains(p.dirs, d) {
		p.dirs = append(p.dirs, d)
	}
	return p, nil
}

// sameNS reports whether pid is in our namespace of the kind (mnt, pid, user).
func sameNS(pid int, kind string) (bool, error) {
	ours := ourNS()[kind]
	if ours == "" {
		return true, nil // no namespaces here: everything shares ours
	}
	theirs, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + kind)
	if err != nil {
		return false, err
	}
	return ours == theirs, nil
}

var ourNS = sync.OnceValue(func() map[string]string {
	ns := map[string]string{}
	for _, kind := range []string{"mnt", "pid", "user"} {
		ns[kind], _ = os.Readlink("/proc/self/ns/" + kind)
	}
	return ns
})

// mapUID translates uid from our user namespace into the one of uid_map's process
// (whose lines read "inside outside count", outside in the reader's namespace);
// -1 when it is not mapped there.
func mapUID(uidMap string, uid int) int {
	b, err := os.ReadFile(uidMap)
	if err != nil || uid < 0 {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.ParseUint(f[0], 10, 32)
		out, err2 := strconv.ParseUint(f[1], 10, 32)
		n, err3 := strconv.ParseUint(f[2], 10, 32)
		if err1 == nil && err2 == nil && err3 == nil && uint64(uid) >= out && uint64(uid)-out < n {
			return int(in + uint64(uid) - out)
		}
	}
	return -1
}

// environ reads a process's environment at exec; empty when it may not be read.
func environ(path string) map[string]string {
	env := map[string]string{}
	b, _ := os.ReadFile(path)
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok {
			env[string(k)] = string(v)
		}
	}
	return env
}

// socket finds p's socket: its directory opened (O_PATH) inside p's root, and the
// socket's name in it, to be reached as /proc/self/fd/DIR/NAME. That path is short
// whatever the length of /proc/PID/root/DIR (sun_path holds 108 bytes), and the
// directory's absolute symbolic links resolve in p's root, not ours. The caller
// closes dir. ENOENT when p has no socket in any of its directories.
func (p *proc) socket() (dir *os.File, name, shown string, err error) {
	name = strconv.Itoa(p.nspid) + ".sock"
	err = syscall.ENOENT
	for _, d := range p.dirs {
		shown = p.root + d + "/" + name
		fd, e := p.openDir(d)
		if e == nil {
			var st unix.Stat_t
			if e = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); e == nil && st.Mode&unix.S_IFMT != unix.S_IFSOCK {
				e = syscall.ENOTSOCK
			}
			if e == nil {
				return os.NewFile(uintptr(fd), p.root+d), name, shown, nil
			}
			unix.Close(fd)
		}
		if !errors.Is(e, syscall.ENOENT) && !errors.Is(err, syscall.EACCES) {
			err = e // a denial says more than a directory that is not there
		}
	}
	if len(p.dirs) > 0 {
		shown = p.root + p.dirs[0] + "/" + name
	}
	return nil, name, shown, err
}

// find reports whether p has a socket, and names it.
func (p *proc) find() (string, error) {
	dir, _, shown, err := p.socket()
	if dir != nil {
		dir.Close()
	}
	return shown, err
}

// openDir opens dir, a path in p's file system, with O_PATH.
func (p *proc) openDir(dir string) (int, error) {
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	if p.root == "" {
		return unix.Open(dir, flags, 0)
	}
	root, err := unix.Open(p.root, flags, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, dir, &unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if errors.Is(err, syscall.ENOSYS) { // before linux 5.6
		fd, err = unix.Openat(root, strings.TrimLeft(dir, "/"), flags, 0)
	}
	return fd, err
}

// connect dials p's control socket.
func (p *proc) connect(timeout time.Duration) (net.Conn, string, error) {
	dir, name, shown, err := p.socket()
	if err != nil {
		return nil, shown, err
	}
	defer dir.Close()
	c, err := net.DialTimeout("unix", fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), name), timeout)
	return c, shown, err
}

// peerPid is the pid of the process that serves c, in our PID namespace (0 when it
// is not in it).
func peerPid(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	pid := 0
	rc.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// foreign lists the processes we may see that have another mount or PID
// namespace than ours, in /proc order.
func foreign() []int {
	var pids []int
	for _, pid := range otherPids() {
		if mnt, ns, ok := ourNamespaces(pid); ok && !(mnt && ns) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// otherPids lists the processes in /proc but this one, in /proc order.
func otherPids() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ourNamespaces says whether pid shares our mount and PID namespaces; ok is false
// when either cannot be read.
func ourNamespaces(pid int) (mnt, ns, ok bool) {
	mnt, err1 := sameNS(pid, "mnt")
	ns, err2 := sameNS(pid, "pid")
	return mnt, ns, err1 == nil && err2 == nil
}

// otherUsers lists, for root, the processes of other users in our namespaces: root
// may control them (their servers let root in), so ps and list show them. Others'
// processes are not ours to list.
func otherUsers() []int {
	if os.Getuid() != 0 {
		return nil
	}
	var pids []int
	for _, pid := range otherPids() {
		fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			if mnt, ns, ok := ourNamespaces(pid); ok && mnt && ns {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// othersNamed finds the processes named name (their command's base name, as gosdt's
// hello says it) that another user owns: what explains why -n NAME found none of ours.
func othersNamed(name string) []otherProc {
	ents, _ := os.ReadDir("/proc")
	var out []otherProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		arg0, _, _ := bytes.Cut(cmdline, []byte{0})
		if err != nil || filepath.Base(string(arg0)) != name {
			continue
		}
		if fi, err := os.Stat("/proc/" + e.Name()); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
				out = append(out, otherProc{pid, int(st.Uid)})
			}
		}
	}
	return out
}

// socketClock is the clock a socket's modification time is read from (the kernel's
// coarse real time): a socket made after it was read is never older than it.
func socketClock() time.Time {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Time{}
	}
	return time.Unix(ts.Unix())
}

// staleSocket reports whether the socket p.find named, shown, was made before since
// (socketClock): a killed process's, left under a pid the kernel gave again.
func staleSocket(shown string, since time.Time) bool {
	fi, err := os.Lstat(shown)
	return err == nil && fi.ModTime().Before(since)
}
