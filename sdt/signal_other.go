//go:build !unix

package sdt

func startSignalToggle() {
	warnf("SDT_MODE=signal: no signals on this platform; probes stay off")
}
