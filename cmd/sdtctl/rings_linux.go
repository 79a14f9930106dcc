package main

import (
	"io"
	"net"

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
