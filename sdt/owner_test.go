package sdt

import (
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

var ownerTick = Define1[int]("ownertest", "tick", "i")

//go:noinline
func ownerSite(i int) { Probe1(&ownerTick, i) }

// ownerClient is a control connection served in-process over a pipe.
type ownerClient struct {
	t  *testing.T
	c  net.Conn
	er ctlproto.EventReader
}

func newOwnerClient(t *testing.T) *ownerClient {
	client, server := net.Pipe()
	go serve(server)
	oc := &ownerClient{t: t, c: client}
	oc.send(&ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version})
	oc.expect(ctlproto.KindHello)
	return oc
}

func (oc *ownerClient) send(q *ctlproto.Request) {
	oc.t.Helper()
	if err := ctlproto.WriteFrame(oc.c, q); err != nil {
		oc.t.Fatal(err)
	}
}

func (oc *ownerClient) read() *ctlproto.Response {
	oc.t.Helper()
	oc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := ctlproto.ReadFrame(oc.c)
	if err != nil {
		oc.t.Fatal(err)
	}
	r, err := ctlproto.DecodeResponse(b)
	if err != nil {
		oc.t.Fatal(err)
	}
	return r
}

// events reads event batches until n events have come.
func (oc *ownerClient) events(n int) {
	oc.t.Helper()
	for n > 0 {
		evs, err := oc.er.Read(oc.expect(ctlproto.KindEvents))
		if err != nil {
			oc.t.Fatal(err)
		}
		n -= len(evs)
	}
}

func (oc *ownerClient) expect(kind string) *ctlproto.Response {
	oc.t.Helper()
	r := oc.read()
	if r.Kind != kind {
		oc.t.Fatalf("got %+v, want %s", r, kind)
	}
	return r
}

// ownerFiring fires the probe until the test ends.
func ownerFiring(t *testing.T) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			ownerSite(i)
			time.Sleep(100 * time.Microsecond)
		}
	}()
}

func siteHolders(t *testing.T, spec string) []string {
	t.Helper()
	list, err := List(spec)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, pi := range list {
		// A probe's holders are those of its sites, or of the definition as a whole
		// (where no site was verified: js/wasm, linux/386).
		for _, h := range pi.HeldBy {
			if !slices.Contains(all, h) {
				all = append(all, h)
			}
		}
	}
	slices.Sort(all)
	return all
}

// TestProgramDisableKeepsTrace: the program's Disable while an sdtctl trace holds the
// probe releases only the program's hold. The sites stay on, the trace keeps
// receiving events, and Disable says who still holds them.
func TestProgramDisableKeepsTrace(t *testing.T) {
	const spec = "ownertest:::tick"
	NeedSwitchable(t, spec)
	ownerFiring(t)
	oc := newOwnerClient(t)
	defer oc.c.Close()
	oc.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec})
	oc.expect(ctlproto.KindStarted)
	oc.events(1)

	if _, err := Enable(spec); err != nil {
		t.Fatal(err)
	}
	if got := siteHolders(t, spec); !slices.Equal(got, []string{"program", "sdtctl trace"}) {
		t.Fatalf("holders %q, want program and the trace", got)
	}
	n, err := Disable(spec)
	var sh *StillHeldError
	if !errors.As(err, &sh) || !errors.Is(err, ErrStillHeld) {
		t.Fatalf("Disable while a trace holds the probe: %d, %v; want a StillHeldError", n, err)
	}
	if n != 0 || sh.Sites+sh.Definitions == 0 || !slices.Equal(sh.Holders, []string{"sdtctl trace"}) {
		t.Fatalf("Disable: %d switched, %+v; want 0 switched and the trace named", n, sh)
	}
	if !ownerTick.Enabled() {
		t.Fatal("the program's Disable switched off a probe the trace holds")
	}
	// Events still arrive after the Disable.
	oc.events(3)
	oc.send(&ctlproto.Request{Op: ctlproto.OpStop})
	for oc.read().Kind != ctlproto.KindEnd {
	}
	if ownerTick.Enabled() {
		t.Fatal("probe still on after the trace, its last owner, ended")
	}
	if got := siteHolders(t, spec); len(got) != 0 {
		t.Fatalf("holders after the trace: %q", got)
	}
}

// TestClientDisableKeepsProgram is the reverse: what the program enabled stays on
// when a client's trace ends and when a client disables it; the client is told who
// holds it.
func TestClientDisableKeepsProgram(t *testing.T) {
	const spec = "ownertest:::tick"
	NeedSwitchable(t, spec)
	ownerFiring(t)
	if _, err := Enable(spec); err != nil {
		t.Fatal(err)
	}
	defer Disable(spec)
	oc := newOwnerClient(t)
	defer oc.c.Close()
	oc.send(&ctlproto.Request{Op: ctlproto.OpTrace, Spec: spec, Count: 2})
	oc.expect(ctlproto.KindStarted)
	oc.events(2)
	oc.expect(ctlproto.KindEnd)
	if !ownerTick.Enabled() {
		t.Fatal("a trace's end switched off a probe the program enabled")
	}
	oc.send(&ctlproto.Request{Op: ctlproto.OpDisable, Specs: []string{spec}})
	r := oc.expect(ctlproto.KindOK)
	if r.N != 0 || r.Kept == 0 || !slices.Equal(r.KeptBy, []string{"program"}) {
		t.Fatalf("client disable: %+v; want nothing switched, kept by the program", r)
	}
	if !ownerTick.Enabled() {
		t.Fatal("a client's disable switched off a probe the program enabled")
	}
	if _, err := Disable(spec); err != nil {
		t.Fatalf("program Disable with no other owner: %v", err)
	}
	if ownerTick.Enabled() {
		t.Fatal("probe on after its only owner disabled it")
	}
}

// TestOwnerHoldsOnce: enabling twice from one owner is one hold; one Disable releases it.
func TestOwnerHoldsOnce(t *testing.T) {
	const spec = "ownertest:::tick"
	NeedSwitchable(t, spec)
	n1, err := Enable(spec)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := Enable(spec)
	if err != nil || n2 != 0 {
		t.Fatalf("second Enable: %d, %v; want 0 switched", n2, err)
	}
	n3, err := Disable(spec)
	if err != nil || n3 != n1 || ownerTick.Enabled() {
		t.Fatalf("Disable: %d, %v (enabled %v); want %d switched off", n3, err, ownerTick.Enabled(), n1)
	}
}
