package ctlserver

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gosdt/gosdt/internal/alarm"
	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/goversion"
	"github.com/gosdt/gosdt/sdt/internal/consume"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// One client connection: a goroutine that reads requests (frames, internal/ctlproto),
// and the answers to each. Streams (trace, stat) are in stream.go.

// How long a client may send nothing (ctlproto's doc, Limits): its hello, from
// connecting; its next request, from the reply to the last, unless a stream runs.
// Then its connection is closed, so that clients that hang or leave a connection
// open do not hold the server's descriptors and goroutines for ever.
const (
	helloTimeout = 10 * time.Second
	idleTimeout  = time.Minute
)

// testTimeouts replace helloTimeout and idleTimeout where not 0: tests change them
// while other connections are served.
var testTimeouts [2]atomic.Int64

func timeout(i int, d time.Duration) time.Duration {
	if t := testTimeouts[i].Load(); t != 0 {
		return time.Duration(t)
	}
	return d
}

// persistOwner holds what sdtctl enable switched on: it outlives the connection,
// until an sdtctl disable releases it.
var persistOwner = &registry.Owner{Name: "sdtctl enable"}

// conn is one client.
type conn struct {
	c    io.ReadWriteCloser
	wmu  sync.Mutex
	wbuf []byte          // frames are made here (wmu): a stream sends many
	o    *registry.Owner // what the connection enables, released when it ends
	name string          // "sdtctl pid N", for the owners it creates
}

// writeTimer is a connection whose writes can be given up after a while (the
// socket's, socketConn). Not SetWriteDeadline(time.Time): an interface that names
// time.Time in a method makes every traced process link time.Time's formatting.
type writeTimer interface{ setWriteTimeout(time.Duration) }

// Name is who the client is, in the owners' names of what it switches on.
func (cc *conn) Name() string { return cc.name }

// Send writes one reply; a client that does not read for 10 s is given up.
func (cc *conn) Send(r *ctlproto.Response) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	b, err := cc.frameLocked(r)
	if err != nil {
		return err
	}
	return cc.writeLocked(b)
}

// frameLocked encodes r in the connection's write buffer, which it keeps for the
// next reply; the caller holds wmu.
func (cc *conn) frameLocked(r *ctlproto.Response) ([]byte, error) {
	b, err := ctlproto.AppendFrame(cc.wbuf[:0], r)
	if err == nil {
		cc.wbuf = b
	}
	return b, err
}

// fdSender is a connection that can pass descriptors (socketConn, linux).
type fdSender interface {
	sendFds(b []byte, fds []int) error
}

// SendShared sends r with read-only descriptors of fds attached (r.Shared says how
// many): a trace's shared buffers; fds[writable] (-1: none) goes as it is, read-write
// (a live trace's heads). Where they cannot be passed, r goes without.
func (cc *conn) SendShared(r *ctlproto.Response, fds []int, writable int) error {
	fs, ok := cc.c.(fdSender)
	var ro, send []int
	for i, fd := range fds {
		if !ok {
			break
		}
		if i == writable {
			send = append(send, fd)
			continue
		}
		r := consume.ReadOnlyFd(fd)
		if r < 0 {
			ok = false
			break
		}
		ro = append(ro, r)
		send = append(send, r)
	}
	defer func() {
		for _, fd := range ro {
			consume.CloseFd(fd)
		}
	}()
	if !ok || len(send) == 0 {
		r.Shared, r.Live = 0, false
		return cc.Send(r)
	}
	r.Shared = len(send)
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	b, err := cc.frameLocked(r)
	if err != nil {
		return err
	}
	if d, ok := cc.c.(writeTimer); ok {
		d.setWriteTimeout(10 * time.Second)
	}
	return fs.sendFds(b, send)
}

// writeLocked writes a frame; wmu held.
func (cc *conn) writeLocked(b []byte) error {
	if d, ok := cc.c.(writeTimer); ok {
		d.setWriteTimeout(10 * time.Second)
	}
	_, err := cc.c.Write(b)
	return err
}

// sendList sends a chunk of a list in as many frames as it takes, each with More but
// the chunk's last, which has more. A frame's count of probes is guessed from the
// bytes the last one took, so that a chunk is encoded about once.
func (cc *conn) sendList(list []ctlproto.Probe, more bool) error {
	if len(list) == 0 {
		if more {
			return nil
		}
		return cc.Send(&ctlproto.Response{Kind: ctlproto.KindList})
	}
	n := 512 // a first guess: most lists fit in one frame
	for len(list) > 0 {
		n = max(1, min(n, len(list)))
		r := &ctlproto.Response{Kind: ctlproto.KindList, Probes: list[:n], More: more || n < len(list)}
		b, err := ctlproto.AppendFrame(nil, r)
		if err != nil && n > 1 { // over MaxFrame
			n /= 2
			continue
		}
		if err != nil {
			return err
		}
		cc.wmu.Lock()
		err = cc.writeLocked(b)
		cc.wmu.Unlock()
		if err != nil {
			return err
		}
		list = list[n:]
		n = n * (ctlproto.MaxFrame * 3 / 4) / len(b) // three quarters of the limit, at this frame's bytes a probe
	}
	return nil
}

func (cc *conn) Fail(err error) error { return cc.Send(ctlproto.ErrorResponse(consume.ErrCode(err))) }

// serve runs one connection to its end. It never panics: a panic is recovered,
// logged, and ends the connection; the connection's holds are released in any case.
func serve(c io.ReadWriteCloser, name string) {
	defer c.Close()
	if consume.Started() != nil {
		return
	}
	cc := &conn{c: c, o: &registry.Owner{Name: name}, name: name}
	defer registry.Release(cc.o)
	defer func() {
		if r := recover(); r != nil {
			consume.Warnf("recovered from panic serving a client: %v\n%s", r, debug.Stack())
			cc.Fail(fmt.Errorf("internal error"))
		}
	}()

	// The reader ends with the connection: a read fails once c is closed (the first
	// defer), and a request read after serve has returned is dropped (done).
	reqs := make(chan *ctlproto.Request)
	errc := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(reqs)
		for {
			b, err := ctlproto.ReadFrame(c)
			if err == nil {
				var q *ctlproto.Request
				if q, err = ctlproto.DecodeRequest(b); err == nil {
					select {
					case reqs <- q:
						continue
					case <-done:
						return
					}
				}
			}
			errc <- err
			return
		}
	}()
	// next is the next request; false when the connection has ended, or the client
	// sent none for wait (it is told, and the connection closes).
	next := func(wait time.Duration) (*ctlproto.Request, bool) {
		idle := alarm.After(wait)
		defer idle.Stop()
		select {
		case q, ok := <-reqs:
			if !ok {
				if err := <-errc; err != io.EOF {
					cc.Fail(err)
				}
			}
			return q, ok
		case <-idle.C:
			cc.Fail(ctlproto.Errorf(ctlproto.CodeTimeout, "no request for %v: connection closed", wait))
			return nil, false
		}
	}

	q, ok := next(timeout(0, helloTimeout))
	if !ok {
		return
	}
	if q.Op != ctlproto.OpHello || q.Version != ctlproto.Version {
		cc.Fail(ctlproto.Errorf(ctlproto.CodeVersion, "want hello with version %d first", ctlproto.Version))
		return
	}
	if cc.Send(cc.hello()) != nil {
		return
	}
	for {
		q, ok := next(timeout(1, idleTimeout))
		if !ok {
			return
		}
		var err error
		if len(q.Sigs) > 0 {
			consume.Signatures(q.Sigs)
		}
		switch q.Op {
		case ctlproto.OpList:
			// A chunk is sent when the next one comes, so that the last frame of the
			// last one says there is no more: a list that fits in a frame is one.
			var last []ctlproto.Probe
			chunk := func(ps []ctlproto.Probe) error {
				if len(ps) == 0 {
					return nil
				}
				err := cc.sendList(last, true)
				last = ps
				return err
			}
			if err = listWire(q.Spec, chunk); err == nil {
				err = cc.sendList(last, false)
			}
		case ctlproto.OpEnable:
			o := cc.o
			if q.Persist {
				o = persistOwner
			}
			var n, already int
			if n, already, err = registry.Hold(o, q.Specs); err == nil {
				err = cc.Send(&ctlproto.Response{Kind: ctlproto.KindOK, N: n, AlreadyOn: already})
			}
		case ctlproto.OpDisable:
			// The connection's holds and those of sdtctl enable: what an operator
			// switched on, an operator switches off.
			var n, kept int
			var keptBy []string
			if n, kept, keptBy, err = registry.Unhold(q.Specs, cc.o, persistOwner); err == nil {
				err = cc.Send(&ctlproto.Response{Kind: ctlproto.KindOK, N: n, Kept: kept, KeptBy: keptBy})
			}
		case ctlproto.OpTrace, ctlproto.OpStat:
			var closed bool
			closed, err = consume.Stream(cc, q, reqs)
			if closed {
				return
			}
		case ctlproto.OpStop:
			err = cc.Send(&ctlproto.Response{Kind: ctlproto.KindEnd})
		default:
			err = ctlproto.Errorf(ctlproto.CodeBadRequest, "%s: not here", q.Op)
		}
		if err != nil {
			if cc.Fail(err) != nil {
				return
			}
		}
	}
}

func (cc *conn) hello() *ctlproto.Response {
	r := &ctlproto.Response{Kind: ctlproto.KindHello, Version: ctlproto.Version, Pid: os.Getpid(), Command: command(), Live: true, BufSizeUpTo: true,
		GoVersion: goversion.Running(), Layouts: goversion.Refusal(goversion.Running())}
	listWire("", func(list []ctlproto.Probe) error {
		r.NProbes += len(list)
		for _, p := range list {
			for _, s := range p.Sites {
				if s.Enabled {
					r.SitesOn++
				}
			}
		}
		return nil
	})
	return r
}

// command is the process's command name, as sdtctl ps shows it.
func command() string {
	// os.Args[0] is /proc/self/cmdline's first word; reading the file would link
	// os.ReadFile's Stat, and with it time's formatting, into every program.
	return filepath.Base(os.Args[0])
}
