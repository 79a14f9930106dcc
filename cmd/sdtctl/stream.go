package main

import (
	"context"
	"os/signal"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// stopper ends a command's streams, once: on Ctrl-C, when the caller's stop closes,
// or when the command says so (a trace's count, reached across processes). A second
// Ctrl-C is the signal's own: it ends sdtctl.
type stopper struct {
	C      <-chan struct{}
	cancel context.CancelFunc
}

func newStopper(stop <-chan struct{}) *stopper { return newStopperFor(stop, false) }

// newStopperFor is newStopper of a trace or stat; following, of a command it started,
// it leaves the signals to the command (follow.go passes them on), and the streams
// end when the command does.
func newStopperFor(stop <-chan struct{}, following bool) *stopper {
	ctx, cancel := context.WithCancel(context.Background())
	intr := ctx
	if !following { // (NotifyContext of no signal would catch every one)
		var unnotify context.CancelFunc
		intr, unnotify = signal.NotifyContext(ctx, stopOn...)
		context.AfterFunc(intr, unnotify)
	}
	if stop != nil {
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return &stopper{C: intr.Done(), cancel: cancel}
}

func (s *stopper) stop() { s.cancel() }

// release stops listening for Ctrl-C, once the streams have ended.
func (s *stopper) release() { s.cancel() }

// stream runs a trace or stat request: it sends stop when stop closes and calls each
// for every reply until the end.
func stream(cl *client, q *ctlproto.Request, stop <-chan struct{}, each func(*ctlproto.Response)) (*ctlproto.Response, error) {
	if q.Live && (cl.hello == nil || !cl.hello.Live) {
		// a process of an earlier gosdt, which refuses the field: its records come
		// in frames
		old := *q
		old.Live = false
		q = &old
	}
	if q.BufSizeUpTo != 0 && (cl.hello == nil || !cl.hello.BufSizeUpTo) {
		old := *q // a process of an earlier gosdt, which refuses the field: its default
		old.BufSizeUpTo = 0
		q = &old
	}
	r, err := cl.call(q)
	if err != nil {
		return nil, err
	}
	if r.Kind != ctlproto.KindStarted {
		return nil, fail(exitError, "pid %d: unexpected %s reply", cl.pid, r.Kind)
	}
	cl.started = r
	if cl.onStarted != nil {
		cl.onStarted(r)
	}
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-stop:
			cl.send(&ctlproto.Request{Op: ctlproto.OpStop})
		case <-ended:
		}
	}()
	for {
		r, err := cl.recv()
		if err != nil {
			return nil, err
		}
		if r.Kind == ctlproto.KindEnd {
			return r, nil
		}
		each(r)
	}
}
