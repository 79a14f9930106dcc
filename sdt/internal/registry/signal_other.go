//go:build !unix

package registry

func startSignalToggle() {
	warnf("SDT_MODE=signal: no signals on this platform; probes stay off")
}
