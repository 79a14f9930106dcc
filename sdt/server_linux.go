package sdt

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"golang.org/x/sys/unix"
)

// The control socket, Linux: $XDG_RUNTIME_DIR/gosdt/<pid>.sock or
// /tmp/gosdt-<uid>/<pid>.sock, in a directory of mode 0700 that must belong to us.
// Peers are checked with SO_PEERCRED. init.go starts it last, once the registry is
// complete, so that the first request finds every site.

var control struct {
	mu     sync.Mutex
	ln     *net.UnixListener
	path   string
	warned map[uint32]bool
}

// startControlFromEnv starts the control server unless SDT_CONTROL=off.
func startControlFromEnv() {
	if v := os.Getenv("SDT_CONTROL"); v == "off" {
		return
	} else if v != "" && v != "on" {
		warnf("SDT_CONTROL=%q: want on or off; the control server starts", v)
	}
	if err := startControl(); err != nil {
		warnf("control server not started: %v", err)
	}
}

// controlDir creates (or checks) the socket directory.
func controlDir() (string, error) {
	dir := ctlproto.Dir()
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "", fmt.Errorf("%s is not a directory", dir)
	case !ok || int(st.Uid) != os.Getuid():
		return "", fmt.Errorf("%s is not owned by uid %d", dir, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("%s has mode %v: group or others may use it", dir, fi.Mode().Perm())
	}
	return dir, nil
}

func startControl() error {
	dir, err := controlDir()
	if err != nil {
		return err
	}
	removeStale(dir)
	path := filepath.Join(dir, fmt.Sprintf("%d.sock", os.Getpid()))
	os.Remove(path) // a stale socket of an earlier process with our pid
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(true)
	control.mu.Lock()
	control.ln, control.path, control.warned = ln, path, map[uint32]bool{}
	control.mu.Unlock()
	go accept(ln)
	return nil
}

// removeStale removes sockets of processes that no longer exist.
func removeStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, ok := ctlproto.PidOf(e.Name())
		if ok && pid != os.Getpid() && unix.Kill(pid, 0) == unix.ESRCH {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// StopControl stops the control server and removes its socket; clients connected
// keep their connections. A program that must not be controlled can call it first
// thing in main, or be started with SDT_CONTROL=off.
func StopControl() {
	control.mu.Lock()
	defer control.mu.Unlock()
	if control.ln != nil {
		control.ln.Close()
		control.ln = nil
	}
}

// ControlSocket is the path of this process's control socket, "" when there is none.
func ControlSocket() string {
	control.mu.Lock()
	defer control.mu.Unlock()
	if control.ln == nil {
		return ""
	}
	return control.path
}

func accept(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			warnf("control: accept: %v", err)
			continue
		}
		if !permitted(c) {
			c.Close()
			continue
		}
		go serve(c)
	}
}

// peerPid is the pid of the process at the other end of c, 0 when unknown.
func peerPid(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	var pid int
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// permitted checks the peer's uid: ours or root. A refused uid is logged once.
func permitted(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	if cred.Uid == 0 || int(cred.Uid) == os.Getuid() {
		return true
	}
	control.mu.Lock()
	first := !control.warned[cred.Uid]
	control.warned[cred.Uid] = true
	control.mu.Unlock()
	if first {
		warnf("control: refused a client with uid %d (pid %d): only uid %d or root", cred.Uid, cred.Pid, os.Getuid())
	}
	ctlproto.WriteFrame(c, ctlproto.ErrorResponse(ctlproto.Errorf(ctlproto.CodePermission,
		"uid %d may not control pid %d (owned by uid %d)", cred.Uid, os.Getpid(), os.Getuid())))
	return false
}
