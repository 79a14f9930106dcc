package main

import (
	"encoding/binary"
	"io"
	"net"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"golang.org/x/sys/unix"
)

// mapShared maps a descriptor the process passed, read-only (it can be nothing
// else: the process passes descriptors opened to read); nil where it cannot be.
func mapShared(fd int) []byte {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Size <= 0 || st.Size > 1<<31 {
		return nil
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return m
}

func closeFd(fd int) { unix.Close(fd) }

// mapHeads maps a live trace's heads, read-write: the one memory of the process's
// that sdtctl writes (ctlproto's live.go); nil where it cannot be.
func mapHeads(fd int) []byte {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Size < ctlproto.HeadsStart || st.Size > 1<<20 {
		return nil
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil || binary.LittleEndian.Uint64(m) != ctlproto.HeadsMagic {
		return nil
	}
	return m
}

// reader reads the connection keeping the descriptors the process passes
// (SCM_RIGHTS) in cl.fds.
func (cl *client) reader() io.Reader {
	if u, ok := cl.c.(*net.UnixConn); ok {
		return fdReader{cl, u}
	}
	return cl.c
}

type fdReader struct {
	cl *client
	u  *net.UnixConn
}

func (r fdReader) Read(p []byte) (int, error) {
	oob := make([]byte, unix.CmsgSpace(64*4))
	n, oobn, _, _, err := r.u.ReadMsgUnix(p, oob)
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if fds, ferr := unix.ParseUnixRights(&m); ferr == nil {
					r.cl.fds = append(r.cl.fds, fds...)
				}
			}
		}
	}
	if n == 0 && err == nil {
		return 0, io.EOF
	}
	return n, err
}
