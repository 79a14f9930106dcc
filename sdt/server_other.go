//go:build !linux

package sdt

// The control server needs SO_PEERCRED to check its clients; elsewhere it does not
// start (getpeereid on the BSDs and macOS is left to do).

// StopControl stops the control server; there is none on this platform.
func StopControl() {}

// ControlSocket is the path of this process's control socket: none on this platform.
func ControlSocket() string { return "" }
