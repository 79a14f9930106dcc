package control_test

import (
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
)

var ownerTick = sdt.Define1[int]("ownertest", "tick", "i")

//go:noinline
func ownerSite(i int) { sdt.Probe1(&ownerTick, i) }

// client is a control connection served in-process over a pipe.
type client struct {
	t  *testing.T
	c  net.Conn
	er ctlproto.EventReader
}

func newClient(t *testing.T) *client {
	c, server := net.Pipe()
	go control.ServeConn(server, "sdtctl")
	cl := &client{t: t, c: c}
	t.Cleanup(func() { c.Close() })
	cl.send(&ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version})
	cl.expect(ctlproto.KindHello)
	return cl
}

func (cl *client) send(q *ctlproto.Request) {
	cl.t.Helper()
	if err := ctlproto.WriteFrame(cl.c, q); err != nil {
		cl.t.Fatal(err)
	}
}

func (cl *client) read() *ctlproto.Response {
	cl.t.Helper()
	// A hang detector, not a timing: a loaded machine under qemu is slow.
	cl.c.SetReadDeadline(time.Now().Add(time.Minute))
	b, err := ctlproto.ReadFrame(cl.c)
	if err != nil {
		cl.t.Fatal(err)
	}
	r, err := ctlproto.DecodeResponse(b)
	if err != nil {
		cl.t.Fatal(err)
	}
	return r
}

func (cl *client) expect(kind string) *ctlproto.Response {
	cl.t.Helper()
	r := cl.read()
	if r.Kind != kind {
		cl.t.Fatalf("got %+v, want %s", r, kind)
	}
	return r
}

// events reads event batches until n events have come.
func (cl *client) events(n int) []ctlproto.Event {
	cl.t.Helper()
	var all []ctlproto.Event
	for len(all) < n {
		evs, err := cl.er.Read(cl.expect(ctlproto.KindEvents))
		if err != nil {
			cl.t.Fatal(err)
		}
		all = append(all, evs...)
	}
	return all
}

// firing fires f until the test ends.
func firing(t *testing.T, f func(int)) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			f(i)
			time.Sleep(100 * time.Microsecond)
		}
	}()
}

// TestProgramDisableKeepsTrace: the program's Disable while an sdtctl trace holds the
// probe releases only the program's hold. The sites stay on, the trace keeps
// receiving events, and Disable says who still holds them.
func TestProgramDisableKeepsTrace(t *testing.T) {
	const spec = "ownertest:::tick"
	needSwitchable(t, spec)
	firing(t, ownerSite)
	cl := newClient(t)
	cl.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec})
	cl.expect(ctlproto.KindStarted)
	cl.events(1)

	if _, err := sdt.Enable(spec); err != nil {
		t.Fatal(err)
	}
	if got := holders(t, spec); !slices.Equal(got, []string{"program", "sdtctl trace"}) {
		t.Fatalf("holders %q, want program and the trace", got)
	}
	n, err := sdt.Disable(spec)
	var sh *sdt.StillHeldError
	if !errors.As(err, &sh) || !errors.Is(err, sdt.ErrStillHeld) {
		t.Fatalf("Disable while a trace holds the probe: %d, %v; want a StillHeldError", n, err)
	}
	if n != 0 || sh.Sites+sh.Definitions == 0 || !slices.Equal(sh.Holders, []string{"sdtctl trace"}) {
		t.Fatalf("Disable: %d switched, %+v; want 0 switched and the trace named", n, sh)
	}
	if !ownerTick.Enabled() {
		t.Fatal("the program's Disable switched off a probe the trace holds")
	}
	// Events still arrive after the Disable.
	cl.events(3)
	cl.send(&ctlproto.Request{Op: ctlproto.OpStop})
	for cl.read().Kind != ctlproto.KindEnd {
	}
	if ownerTick.Enabled() {
		t.Fatal("probe still on after the trace, its last owner, ended")
	}
	if got := holders(t, spec); len(got) != 0 {
		t.Fatalf("holders after the trace: %q", got)
	}
}

// TestClientDisableKeepsProgram is the reverse: what the program enabled stays on
// when a client's trace ends and when a client disables it; the client is told who
// holds it.
func TestClientDisableKeepsProgram(t *testing.T) {
	const spec = "ownertest:::tick"
	needSwitchable(t, spec)
	firing(t, ownerSite)
	if _, err := sdt.Enable(spec); err != nil {
		t.Fatal(err)
	}
	defer sdt.Disable(spec)
	cl := newClient(t)
	cl.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec, Count: 2})
	cl.expect(ctlproto.KindStarted)
	if evs := cl.events(2); len(evs) != 2 {
		t.Fatalf("trace -c 2 sent %d events", len(evs))
	}
	cl.expect(ctlproto.KindEnd)
	if !ownerTick.Enabled() {
		t.Fatal("a trace's end switched off a probe the program enabled")
	}
	cl.send(&ctlproto.Request{Op: ctlproto.OpDisable, Specs: []string{spec}})
	r := cl.expect(ctlproto.KindOK)
	if r.N != 0 || r.Kept == 0 || !slices.Equal(r.KeptBy, []string{"program"}) {
		t.Fatalf("client disable: %+v; want nothing switched, kept by the program", r)
	}
	if !ownerTick.Enabled() {
		t.Fatal("a client's disable switched off a probe the program enabled")
	}
	if _, err := sdt.Disable(spec); err != nil {
		t.Fatalf("program Disable with no other owner: %v", err)
	}
	if ownerTick.Enabled() {
		t.Fatal("probe on after its only owner disabled it")
	}
}

// TestStreamEndAfterRelease: a client that has read a stream's end finds the probes
// the stream enabled off again (sdtctl runs "trace -c N" and then "enable" in scripts
// and counts the sites the enable switched on). Run over a pipe, so that the reader
// goes on the moment the end is written.
func TestStreamEndAfterRelease(t *testing.T) {
	const spec = "ownertest:::tick"
	needSwitchable(t, spec)
	firing(t, ownerSite)
	for run := range 100 {
		cl := newClient(t)
		if run%2 == 0 {
			cl.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec, Count: 1})
			cl.expect(ctlproto.KindStarted)
			cl.events(1)
			cl.expect(ctlproto.KindEnd)
		} else {
			cl.send(&ctlproto.Request{Op: ctlproto.OpStat, Spec: spec, DurationMS: 1, IntervalMS: 100})
			cl.expect(ctlproto.KindStarted)
			for cl.read().Kind != ctlproto.KindEnd {
			}
		}
		if ownerTick.Enabled() {
			t.Fatalf("run %d: the stream has ended but its probe is still on", run)
		}
		cl.c.Close()
	}
}

// TestServerErrors: bad requests get their codes and change nothing.
func TestServerErrors(t *testing.T) {
	cl := newClient(t)
	for _, c := range []struct {
		q    ctlproto.Request
		code string
	}{
		{ctlproto.Request{Op: ctlproto.OpEnable, Specs: []string{"nosuch:::probe"}}, ctlproto.CodeNoMatch},
		{ctlproto.Request{Op: ctlproto.OpEnable, Specs: []string{"ownertest:::tick", "a:b:c:d:e"}}, ctlproto.CodeBadSpec},
		{ctlproto.Request{Op: ctlproto.OpTrace, Spec: "[x"}, ctlproto.CodeBadSpec},
		{ctlproto.Request{Op: ctlproto.OpStat, Spec: "ownertest:::tick", By: "arg7"}, ctlproto.CodeBadRequest},
		{ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version}, ctlproto.CodeBadRequest},
	} {
		cl.send(&c.q)
		if r := cl.expect(ctlproto.KindError); r.Code != c.code {
			t.Errorf("%+v: %s (%s), want %s", c.q, r.Code, r.Message, c.code)
		}
	}
	if ownerTick.Enabled() {
		t.Fatal("a refused request switched a probe on")
	}
}

// TestLiveOverPipe: a connection that cannot pass descriptors (a pipe, another
// platform) asks for a live trace in vain: the start says it is not, and the
// records come in frames as before, exact.
func TestLiveOverPipe(t *testing.T) {
	const spec = "ownertest:::tick"
	needSwitchable(t, spec)
	firing(t, ownerSite)
	cl := newClient(t)
	cl.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec, Live: true})
	if r := cl.expect(ctlproto.KindStarted); r.Live || r.Shared != 0 {
		t.Fatalf("started live (%v) with %d descriptors over a pipe", r.Live, r.Shared)
	}
	cl.events(3)
	cl.send(&ctlproto.Request{Op: ctlproto.OpStop})
	for cl.read().Kind != ctlproto.KindEnd {
	}
}
