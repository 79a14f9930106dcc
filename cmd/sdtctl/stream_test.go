package main

import (
	"net"
	"os/exec"
	"testing"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// TestStreamOlderProcess: a trace asks a process only for what its hello says it
// takes: a process of an earlier gosdt (no Live, no BufSizeUpTo in its hello) is
// sent neither field, which it would refuse; one that takes them gets both.
func TestStreamOlderProcess(t *testing.T) {
	for _, hello := range []ctlproto.Response{{Kind: ctlproto.KindHello}, {Kind: ctlproto.KindHello, Live: true, BufSizeUpTo: true}} {
		c, s := net.Pipe()
		got := make(chan *ctlproto.Request, 1)
		go func() {
			defer s.Close()
			b, err := ctlproto.ReadFrame(s)
			if err != nil {
				got <- nil
				return
			}
			q, _ := ctlproto.DecodeRequest(b)
			got <- q
			ctlproto.WriteFrame(s, &ctlproto.Response{Kind: ctlproto.KindError, Code: ctlproto.CodeBadRequest, Message: "enough"})
		}()
		cl := &client{c: c, pid: 1, hello: &hello}
		q := &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "x:::y", Live: true, BufSizeUpTo: 32 << 20}
		stream(cl, q, nil, func(*ctlproto.Response) {})
		c.Close()
		sent := <-got
		if sent == nil {
			t.Fatalf("hello %+v: no request read", hello)
		}
		if sent.Live != hello.Live || (sent.BufSizeUpTo != 0) != hello.BufSizeUpTo {
			t.Errorf("hello %+v: sent Live %v, BufSizeUpTo %d", hello, sent.Live, sent.BufSizeUpTo)
		}
		if !q.Live || q.BufSizeUpTo == 0 {
			t.Errorf("the caller's request was changed: %+v", q)
		}
	}
}

// TestStreamFrameCutByExit: a process that exits while it writes a frame leaves
// sdtctl half of it. That is the process's end (its trace reads the rest from the
// shared buffers), not a bad reply: the stream ends "process exited" (exit 8), as
// when it ends between frames. It ended "connection: badrequest: truncated frame"
// (exit 1), once in CI, when a command exited during export's large batch.
func TestStreamFrameCutByExit(t *testing.T) {
	for name, cut := range map[string]func([]byte) []byte{
		"in the body":   func(b []byte) []byte { return b[:len(b)/2] },
		"in the header": func(b []byte) []byte { return b[:2] },
		"between":       func(b []byte) []byte { return nil },
	} {
		// the process is alive when the frame is cut, and gone a moment after:
		// as a process is, whose socket closes before it is reaped
		ending := exec.Command("sleep", "0.3")
		if err := ending.Start(); err != nil {
			t.Skipf("no process to end: %v", err)
		}
		go ending.Wait()
		c, s := net.Pipe()
		go func() {
			defer s.Close()
			if _, err := ctlproto.ReadFrame(s); err != nil {
				return
			}
			ctlproto.WriteFrame(s, &ctlproto.Response{Kind: ctlproto.KindStarted})
			b, _ := ctlproto.AppendFrame(nil, &ctlproto.Response{Kind: ctlproto.KindEvents, Probes: make([]ctlproto.Probe, 500)})
			s.Write(cut(b))
		}()
		cl := &client{c: c, pid: ending.Process.Pid}
		_, err := stream(cl, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "x:::y"}, nil, func(*ctlproto.Response) {})
		c.Close()
		if exitCode(err) != exitExited {
			t.Errorf("cut %s: %v (exit %d), want the process's end (exit %d)", name, err, exitCode(err), exitExited)
		}
	}
}
