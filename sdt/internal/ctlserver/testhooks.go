package ctlserver

import (
	"io"
	"time"
)

// Hooks for package control's tests, which test the server through the API programs
// use; nothing else calls them.

// ServeConn serves one client connection, for tests that talk to the server over a
// pipe.
func ServeConn(c io.ReadWriteCloser, name string) { serve(c, name) }

// SetTimeouts sets how long a client may take to send its hello and its next
// request, until the returned function restores them.
func SetTimeouts(hello, idle time.Duration) (restore func()) {
	h, i := testTimeouts[0].Swap(int64(hello)), testTimeouts[1].Swap(int64(idle))
	return func() { testTimeouts[0].Store(h); testTimeouts[1].Store(i) }
}
