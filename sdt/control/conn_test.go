package control_test

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/control"
)

// TestConnGoroutinesEnd: whatever a client does, the server's goroutines for its
// connection end with it. Each way of misbehaving, 50 times; the count of goroutines
// must come back to what it was. Before the fix, two frames without a hello left the
// reader blocked for ever on handing the second one over, and a client that sent
// nothing was served for ever.
func TestConnGoroutinesEnd(t *testing.T) {
	defer control.SetTimeouts(200*time.Millisecond, 200*time.Millisecond)()
	const spec = "accttest:::fire"
	frame := func(q *ctlproto.Request) []byte {
		b, err := ctlproto.AppendFrame(nil, q)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hello := frame(&ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version})
	list := frame(&ctlproto.Request{Op: ctlproto.OpList, Spec: "*"})
	cases := []struct {
		name string
		run  func(c net.Conn)
	}{
		{"close at once", func(c net.Conn) {}},
		{"two frames without hello", func(c net.Conn) {
			go c.Write(append(append([]byte{}, list...), list...))
			readReply(c)
		}},
		{"garbage", func(c net.Conn) {
			go c.Write([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
			readReply(c)
		}},
		{"closed mid-frame", func(c net.Conn) {
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], 100)
			c.Write(append(hdr[:], 1, 2, 3))
		}},
		{"hello, then a frame cut short", func(c net.Conn) {
			c.Write(hello)
			readReply(c)
			c.Write(list[:len(list)-2])
		}},
		{"nothing, left open", func(c net.Conn) {
			readReply(c) // the hello timeout's error, then the end
			readReply(c)
		}},
		{"hello, then idle", func(c net.Conn) {
			c.Write(hello)
			readReply(c)
			readReply(c)
			readReply(c)
		}},
		{"gone during a stream", func(c net.Conn) {
			c.Write(hello)
			readReply(c)
			c.Write(frame(&ctlproto.Request{Op: ctlproto.OpStat, Spec: spec, IntervalMS: 100}))
			readReply(c)
		}},
	}
	control.Serve() // its accept goroutine (if it has one here) counted in the base, not as a leak
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			var wg sync.WaitGroup
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, server := net.Pipe()
					go control.ServeConn(server, "sdtctl")
					c.SetDeadline(time.Now().Add(10 * time.Second))
					tc.run(c)
					c.Close()
				}()
			}
			wg.Wait()
			waitGoroutines(t, base)
		})
	}
}

// readReply reads one frame, or fails quietly: what the misbehaving client gets
// does not matter, only that the server is done with it.
func readReply(c net.Conn) {
	ctlproto.ReadFrame(c)
}

// waitGoroutines waits, up to 10 s, for the goroutines to be no more than base.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIdleTimeout: a client that sends no hello, or no request after one, is told
// and its connection closed; a running stream is not idle, however long it runs.
func TestIdleTimeout(t *testing.T) {
	defer control.SetTimeouts(100*time.Millisecond, 300*time.Millisecond)()
	expectTimeout := func(t *testing.T, c net.Conn) {
		t.Helper()
		b, err := ctlproto.ReadFrame(c)
		if err != nil {
			t.Fatalf("no reply before the connection ended: %v", err)
		}
		r, err := ctlproto.DecodeResponse(b)
		if err != nil || r.Kind != ctlproto.KindError || r.Code != ctlproto.CodeTimeout {
			t.Fatalf("got %+v, %v; want a timeout error", r, err)
		}
		if _, err := ctlproto.ReadFrame(c); err != io.EOF {
			t.Fatalf("after the timeout: %v, want the end of the connection", err)
		}
	}
	t.Run("no hello", func(t *testing.T) {
		c, server := net.Pipe()
		go control.ServeConn(server, "sdtctl")
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		expectTimeout(t, c)
	})
	t.Run("idle after a request", func(t *testing.T) {
		cl := newClient(t)
		cl.c.SetDeadline(time.Now().Add(10 * time.Second))
		cl.send(&ctlproto.Request{Op: ctlproto.OpList, Spec: "accttest:::*"})
		cl.expect(ctlproto.KindList)
		expectTimeout(t, cl.c)
	})
	t.Run("a stream is not idle", func(t *testing.T) {
		const spec = "accttest:::fire"
		needSwitchable(t, spec)
		cl := newClient(t)
		cl.send(&ctlproto.Request{Op: ctlproto.OpStat, Spec: spec, IntervalMS: 100, DurationMS: 1000})
		cl.expect(ctlproto.KindStarted)
		stats := 0
		for {
			r := cl.read()
			if r.Kind == ctlproto.KindEnd {
				break
			}
			if r.Kind != ctlproto.KindStat {
				t.Fatalf("during the stream: %+v", r)
			}
			stats++
		}
		if stats < 2 {
			t.Fatalf("%d snapshots in a 1 s stream with 100 ms intervals", stats)
		}
		// and the connection serves on, until idle again
		cl.send(&ctlproto.Request{Op: ctlproto.OpList, Spec: spec})
		cl.expect(ctlproto.KindList)
	})
}
