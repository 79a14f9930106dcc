package main

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

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

// directWriter is how a raw trace writes ring bytes straight from their mapping
// when out is a file or pipe (one writev of the pieces, no copy in sdtctl); nil
// where out is not a file.
func directWriter(out io.Writer) func([][]byte) error {
	f, ok := out.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return func(bufs [][]byte) error {
		for len(bufs) > 0 {
			var n int
			var werr error
			err := rc.Write(func(fd uintptr) bool {
				n, werr = unix.Writev(int(fd), bufs)
				return !errors.Is(werr, syscall.EAGAIN) // a non-blocking pipe: wait for room
			})
			if err == nil {
				err = werr
			}
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return err
			}
			if n == 0 {
				return io.ErrShortWrite
			}
			for n > 0 && len(bufs) > 0 { // a partial write: what is left
				if n < len(bufs[0]) {
					bufs[0] = bufs[0][n:]
					n = 0
					break
				}
				n -= len(bufs[0])
				bufs = bufs[1:]
			}
			for len(bufs) > 0 && len(bufs[0]) == 0 {
				bufs = bufs[1:]
			}
		}
		return nil
	}
}

// liveSleep sleeps d: under a millisecond by nanosleep, as the runtime's timers
// wake a sleeper no sooner than their poller's millisecond.
func liveSleep(d time.Duration) {
	if d >= time.Millisecond {
		time.Sleep(d)
		return
	}
	ts := unix.NsecToTimespec(int64(d))
	unix.Nanosleep(&ts, nil)
}
