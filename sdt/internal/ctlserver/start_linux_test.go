package ctlserver

import (
	"testing"
	"time"

	"github.com/gosdt/gosdt/sdt/internal/consume"
)

// BenchmarkArm is what the control plane costs sdt's init: arming the timer of the
// automatic Serve (and, here, disarming it).
func BenchmarkArm(b *testing.B) {
	Stop()
	for b.Loop() {
		arm()
		Stop()
	}
}

// BenchmarkServe is what the automatic Serve costs when it runs, 20 ms after start:
// the directory checked, the socket bound and listened on, the accept goroutine
// parked in the poller (and, here, the socket closed and removed).
func BenchmarkServe(b *testing.B) {
	if err := consume.Started(); err != nil {
		b.Skip(err)
	}
	b.Setenv("XDG_RUNTIME_DIR", b.TempDir())
	Stop()
	for b.Loop() {
		if err := Serve(); err != nil {
			b.Fatal(err)
		}
		Stop()
	}
	time.Sleep(time.Millisecond) // let the accept goroutines see their sockets closed
}

// TestStopBeforeStart: a Stop before sdt's start (sdtctl's, from a package initialised
// before sdt) keeps the automatic Serve from being armed at all; Serve undoes it.
func TestStopBeforeStart(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	Stop()
	arm()
	server.Lock()
	pending := server.pending
	server.Unlock()
	if pending != nil {
		t.Fatal("armed after Stop")
	}
	if err := consume.Started(); err == nil {
		if err := Serve(); err != nil || Socket() == "" {
			t.Fatalf("Serve after Stop: %v, socket %q", err, Socket())
		}
		Stop()
	}
}
