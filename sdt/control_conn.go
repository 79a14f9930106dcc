package sdt

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// The control server answers sdtctl over a unix socket (see server_linux.go for the
// socket and the peer check, internal/ctlproto for the protocol). This file is one
// connection: a goroutine that reads requests, and the answers to each.

// errCode maps an sdt error to a protocol error.
func errCode(err error) error {
	var pe *ctlproto.Error
	switch {
	case errors.As(err, &pe):
		return err
	case errors.Is(err, ErrMalformedSpec):
		return ctlproto.Errorf(ctlproto.CodeBadSpec, "%v", err)
	case errors.Is(err, ErrNoMatch):
		return ctlproto.Errorf(ctlproto.CodeNoMatch, "%v", err)
	case errors.Is(err, ErrNotSupported):
		return ctlproto.Errorf(ctlproto.CodeNotSupported, "%v", err)
	}
	return ctlproto.Errorf(ctlproto.CodeInternal, "%v", err)
}

// conn is one client.
type conn struct {
	c     net.Conn
	wmu   sync.Mutex
	o     *owner                // what the connection holds, released when it ends
	name  string                // "sdtctl pid N", for the owners it creates
	descs map[[2]uintptr]uint64 // the descriptions a trace stream has sent
}

func (cc *conn) send(r *ctlproto.Response) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	cc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return ctlproto.WriteFrame(cc.c, r)
}

func (cc *conn) fail(err error) error { return cc.send(ctlproto.ErrorResponse(errCode(err))) }

// serve runs one connection to its end. It never panics: a panic is recovered,
// logged, and ends the connection; the connection's holds are released in any case.
func serve(c net.Conn) {
	name := "sdtctl"
	if pid := peerPid(c); pid > 0 {
		name = fmt.Sprintf("sdtctl pid %d", pid)
	}
	cc := &conn{c: c, o: newOwner(name), name: name, descs: map[[2]uintptr]uint64{}}
	defer c.Close()
	defer release(cc.o)
	defer func() {
		if r := recover(); r != nil {
			warnf("control: recovered from panic serving a client: %v\n%s", r, debug.Stack())
			cc.fail(fmt.Errorf("internal error"))
		}
	}()

	reqs := make(chan *ctlproto.Request)
	errc := make(chan error, 1)
	go func() {
		defer close(reqs)
		for {
			b, err := ctlproto.ReadFrame(c)
			if err == nil {
				var q *ctlproto.Request
				if q, err = ctlproto.DecodeRequest(b); err == nil {
					reqs <- q
					continue
				}
			}
			errc <- err
			return
		}
	}()
	next := func() (*ctlproto.Request, bool) {
		q, ok := <-reqs
		if !ok {
			if err := <-errc; err != io.EOF {
				cc.fail(err)
			}
		}
		return q, ok
	}

	q, ok := next()
	if !ok {
		return
	}
	if q.Op != ctlproto.OpHello || q.Version != ctlproto.Version {
		cc.fail(ctlproto.Errorf(ctlproto.CodeVersion, "want hello with version %d first", ctlproto.Version))
		return
	}
	if cc.send(helloResponse()) != nil {
		return
	}
	for {
		q, ok := next()
		if !ok {
			return
		}
		var err error
		switch q.Op {
		case ctlproto.OpList:
			err = cc.list(q)
		case ctlproto.OpEnable:
			o := cc.o
			if q.Persist {
				o = persistOwner
			}
			var n, already int
			if n, already, err = hold(o, q.Specs); err == nil {
				err = cc.send(&ctlproto.Response{Kind: ctlproto.KindOK, N: n, AlreadyOn: already})
			}
		case ctlproto.OpDisable:
			var n, kept int
			var keptBy []string
			if n, kept, keptBy, err = unhold(cc.o, q.Specs); err == nil {
				err = cc.send(&ctlproto.Response{Kind: ctlproto.KindOK, N: n, Kept: kept, KeptBy: keptBy})
			}
		case ctlproto.OpTrace, ctlproto.OpStat:
			var closed bool
			closed, err = cc.stream(q, reqs)
			if closed {
				return
			}
		case ctlproto.OpStop:
			err = cc.send(&ctlproto.Response{Kind: ctlproto.KindEnd})
		default:
			err = ctlproto.Errorf(ctlproto.CodeBadRequest, "%s: not here", q.Op)
		}
		if err != nil {
			if cc.fail(err) != nil {
				return
			}
		}
	}
}

func helloResponse() *ctlproto.Response {
	r := &ctlproto.Response{Kind: ctlproto.KindHello, Version: ctlproto.Version, Pid: os.Getpid(), Command: command()}
	list, _ := List("")
	r.NProbes = len(list)
	for _, pi := range list {
		for _, s := range pi.Sites {
			if s.Enabled {
				r.SitesOn++
			}
		}
	}
	return r
}

func command() string {
	if b, err := os.ReadFile("/proc/self/cmdline"); err == nil && len(b) > 0 {
		for i, c := range b {
			if c == 0 {
				b = b[:i]
				break
			}
		}
		return filepath.Base(string(b))
	}
	return filepath.Base(os.Args[0])
}

func (cc *conn) list(q *ctlproto.Request) error {
	list, err := List(q.Spec)
	if err != nil {
		return err
	}
	r := &ctlproto.Response{Kind: ctlproto.KindList, Probes: []ctlproto.Probe{}}
	for _, pi := range list {
		p := ctlproto.Probe{Name: pi.String(), Enabled: pi.Enabled, Hits: pi.Hits, HeldBy: pi.HeldBy, Sites: []ctlproto.Site{}}
		for _, a := range pi.Args {
			p.Args = append(p.Args, ctlproto.Arg{Name: a.Name, Type: a.Type})
		}
		for _, s := range pi.Sites {
			p.Sites = append(p.Sites, ctlproto.Site{Addr: uint64(s.Addr), File: s.File, Line: s.Line, Kind: s.Kind,
				State: s.State.String(), Enabled: s.Enabled, Reason: s.Reason, Hits: s.Hits, HeldBy: s.HeldBy})
		}
		r.Probes = append(r.Probes, p)
	}
	return cc.send(r)
}
