package sdt

import (
	"net"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

var streamed = Define1[int]("servertest", "tick", "i")

//go:noinline
func streamSite(i int) { Probe1(&streamed, i) }

// TestStreamEndAfterRelease: a client that has read a stream's end finds the probes
// the stream enabled off again (sdtctl runs "trace -c N" and then "enable" in scripts
// and counts the sites the enable switched on). Run over a pipe, so that the reader
// goes on the moment the end is written.
func TestStreamEndAfterRelease(t *testing.T) {
	NeedSwitchable(t, "servertest:::tick")
	done := make(chan struct{})
	defer close(done)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			streamSite(i)
			if i%64 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	for run := range 100 {
		client, server := net.Pipe()
		go serve(server)
		call := func(q *ctlproto.Request, want ...string) {
			t.Helper()
			if q != nil {
				if err := ctlproto.WriteFrame(client, q); err != nil {
					t.Fatal(err)
				}
			}
			for _, kind := range want {
				b, err := ctlproto.ReadFrame(client)
				if err != nil {
					t.Fatal(err)
				}
				r, err := ctlproto.DecodeResponse(b)
				if err != nil || r.Kind != kind {
					t.Fatalf("run %d: got %+v (%v), want %s", run, r, err, kind)
				}
			}
		}
		call(&ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version}, ctlproto.KindHello)
		if run%2 == 0 {
			call(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: "servertest:::tick", Count: 1},
				ctlproto.KindStarted, ctlproto.KindEvents, ctlproto.KindEnd)
		} else {
			call(&ctlproto.Request{Op: ctlproto.OpStat, Spec: "servertest:::tick", DurationMS: 1, IntervalMS: 100},
				ctlproto.KindStarted)
			for {
				b, err := ctlproto.ReadFrame(client)
				if err != nil {
					t.Fatal(err)
				}
				if r, _ := ctlproto.DecodeResponse(b); r != nil && r.Kind == ctlproto.KindEnd {
					break
				}
			}
		}
		if streamed.Enabled() {
			t.Fatalf("run %d: the stream has ended but its probe is still on", run)
		}
		client.Close()
	}
}
