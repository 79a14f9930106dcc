//go:build !linux

package ctlserver

import "errors"

// The control server needs SO_PEERCRED to check its clients; elsewhere it does not
// start (getpeereid on the BSDs and macOS is left to do). Traces and aggregations in
// the process work everywhere.

var errNoServer = errors.New("control: no control server on this platform (it checks clients with SO_PEERCRED, linux only)")

func arm() {}

// Serve makes this process reachable by sdtctl: not on this platform.
func Serve() error { return errNoServer }

// Stop stops serving sdtctl; there is no server on this platform.
func Stop() {}

// Socket is the path of this process's control socket: none on this platform.
func Socket() string { return "" }
