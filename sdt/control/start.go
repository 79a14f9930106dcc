package control

import (
	"os"

	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

// Package sdt imports this package, so this runs before sdt's own initialisation;
// sdt calls start once that is complete. This is the package's only init.
func init() { bridge.Start = start }

// start takes the registry and, unless SDT_CONTROL=off, starts serving sdtctl.
func start(r bridge.Registry) {
	plane.Lock()
	plane.reg = r
	plane.Unlock()
	switch v := os.Getenv("SDT_CONTROL"); v {
	case "off":
		return
	case "", "on":
	default:
		warnf("SDT_CONTROL=%q: want on or off; the control server starts", v)
	}
	if err := Serve(); err != nil && err != errNoServer {
		warnf("control server not started: %v", err)
	}
}
