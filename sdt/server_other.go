//go:build !linux

package sdt

import "net"

func startControlFromEnv() {}

// peerPid is the pid of the process at the other end of c: unknown here.
func peerPid(net.Conn) int { return 0 }

// The control server needs SO_PEERCRED to check its clients; elsewhere it does not
// start (getpeereid on the BSDs and macOS is left to do).

// StopControl stops the control server; there is none on this platform.
func StopControl() {}

// ControlSocket is the path of this process's control socket: none on this platform.
func ControlSocket() string { return "" }
