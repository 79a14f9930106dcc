package main

import (
	"net"
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
