//go:build !linux

package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// Without /proc and namespaces (the control server runs on linux only): a process's
// socket is looked for in our own directory.

type proc struct {
	pid, nspid int
	uid        int
	dir        string
	hidden     error
}

func locate(pid int) (*proc, error) {
	return &proc{pid: pid, nspid: pid, uid: -1, dir: ctlproto.Dir()}, nil
}

func (p *proc) path() string { return filepath.Join(p.dir, strconv.Itoa(p.nspid)+".sock") }

func (p *proc) find() (string, error) {
	if _, err := os.Lstat(p.path()); err != nil {
		return p.path(), syscall.ENOENT
	}
	return p.path(), nil
}

func (p *proc) connect(timeout time.Duration) (net.Conn, string, error) {
	c, err := net.DialTimeout("unix", p.path(), timeout)
	return c, p.path(), err
}

func peerPid(c net.Conn) int { return 0 }

func foreign() []int { return nil }

func othersNamed(name string) []otherProc { return nil }

func otherUsers() []int { return nil }

// No control servers run here: no socket is found, stale or not.
func socketClock() time.Time { return time.Time{} }

func staleSocket(shown string, since time.Time) bool { return false }
