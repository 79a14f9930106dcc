package control_test

import (
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var acctProbe = sdt.Define2[int, string]("accttest", "fire", "n", "s")

//go:noinline
func acctSite(n int, s string) { sdt.Probe2(&acctProbe, n, s) }

// fireFrom fires acctSite each times from each of g goroutines, and returns when all
// have.
func fireFrom(g, each int) {
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				acctSite(w*each+i, "abcdefghij"[:i%11])
				if i%512 == 0 {
					runtime.Gosched() // js/wasm: let the reader run
				}
			}
		}()
	}
	wg.Wait()
}

// TestTraceAccounting: with 1, 2 and 8 goroutines firing while a reader takes the
// events, every fire is read once or counted dropped: fired = read + dropped. The
// buffers are small, so that both happen.
func TestTraceAccounting(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	each := 40000
	if testing.Short() {
		each = 5000
	}
	for _, g := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("goroutines=%d", g), func(t *testing.T) {
			tr, err := control.OpenTrace(spec, control.TraceOptions{BufSize: 16 << 10})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			seen := make([]bool, g*each)
			read := 0
			take := func(r *control.Record) bool {
				n := int(r.Int(0))
				if n < 0 || n >= len(seen) || seen[n] || string(r.Bytes(1)) != "abcdefghij"[:n%each%11] {
					t.Errorf("event n=%d s=%q (seen %v)", n, r.Bytes(1), n >= 0 && n < len(seen) && seen[n])
					return false
				}
				seen[n] = true
				read++
				return true
			}
			readWhile(t, tr, func() { fireFrom(g, each) }, take)
			t.Logf("fired %d: read %d, dropped %d", g*each, read, tr.Drops())
			if read+int(tr.Drops()) != g*each {
				t.Fatalf("fired %d, read %d, dropped %d", g*each, read, tr.Drops())
			}
		})
	}
}

// readWhile runs fire, taking tr's events as they come, then what is left.
func readWhile(t *testing.T, tr *control.Trace, fire func(), take func(r *control.Record) bool) {
	t.Helper()
	done := make(chan struct{})
	go func() { fire(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if _, err := tr.Each(time.Millisecond, take); err != nil {
			t.Fatal(err)
		}
	}
	for {
		n, err := tr.Each(0, take)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// stream is a trace stream to an in-process server over a pipe.
type stream struct {
	*client
	events int
}

func openStream(t *testing.T, q *ctlproto.Request) *stream {
	cl := newClient(t)
	cl.send(q)
	cl.expect(ctlproto.KindStarted)
	return &stream{client: cl}
}

// drain reads batches until the end, counting events; it returns the end.
func (s *stream) drain() *ctlproto.Response {
	for {
		r := s.read()
		switch r.Kind {
		case ctlproto.KindEnd:
			return r
		case ctlproto.KindEvents:
			evs, err := s.er.Read(r)
			if err != nil {
				s.t.Fatal(err)
			}
			s.events += len(evs)
		default:
			s.t.Fatalf("unexpected %+v", r)
		}
	}
}

// TestStreamStallResume: a client that stops reading for a while does not lose its
// stream: the process drops what its buffers cannot hold, counts it, and goes on
// when the client reads again; the end's accounting is exact.
func TestStreamStallResume(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	s := openStream(t, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec, BufSize: 16 << 10})
	fireFrom(2, 20000) // the client reads nothing meanwhile: the pipe blocks the server
	time.Sleep(200 * time.Millisecond)
	fireFrom(2, 20000)
	s.send(&ctlproto.Request{Op: ctlproto.OpStop})
	end := s.drain()
	t.Logf("fired 80000: %d delivered, %d dropped %v", s.events, end.Drops, end.BufferDrops)
	if uint64(s.events) != end.Delivered || end.Delivered+end.Drops != 80000 || end.Drops == 0 {
		t.Fatalf("fired 80000, read %d, end %+v", s.events, end)
	}
	if acctProbe.Enabled() {
		t.Fatal("the probe is on after the stream ended")
	}
}

// TestStreamDisappears: a client that goes away in the middle of a stream leaves
// nothing behind: its probe goes off, its trace closes, the server's goroutines end.
func TestStreamDisappears(t *testing.T) {
	const spec = "accttest:::fire"
	needSwitchable(t, spec)
	base := runtime.NumGoroutine()
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			acctSite(i, "x")
			if i%256 == 0 {
				time.Sleep(50 * time.Microsecond) // js/wasm: a sleep lets its event loop run
			}
		}
	}()
	c, server := net.Pipe()
	go control.ServeConn(server, "sdtctl")
	cl := &client{t: t, c: c}
	cl.send(&ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version})
	cl.expect(ctlproto.KindHello)
	cl.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec})
	cl.expect(ctlproto.KindStarted)
	cl.events(1)
	if !acctProbe.Enabled() || control.OpenConsumers() != 1 {
		t.Fatalf("during the stream: enabled %v, %d consumers open", acctProbe.Enabled(), control.OpenConsumers())
	}
	c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for acctProbe.Enabled() || control.OpenConsumers() != 0 || len(holders(t, spec)) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the client went: enabled %v, %d consumers open, held by %q",
				acctProbe.Enabled(), control.OpenConsumers(), holders(t, spec))
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
