package control

import (
	"os"
	"time"
)

// When the socket is bound. sdt's init hands over the registry; binding waits
// startDelay more, on a timer. So a process that ends sooner (a short command, a tool
// run under go build -toolexec) touches no file and binds nothing, and a main that
// calls Stop first thing is never reachable; sdtctl waits for a process younger than
// that. Until
// the timer fires nothing runs: it is one runtime timer.
const startDelay = 20 * time.Millisecond

// Package sdt imports this package, so this runs before sdt's own initialisation;
// sdt calls start once that is complete. This is the package's only init.
// Start is called once by package sdt at the end of its init, the registry
// complete: unless SDT_CONTROL=off, it arms the automatic Serve.
func Start() {
	startClock()
	plane.Lock()
	plane.started = true
	plane.Unlock()
	if startFollow() {
		// sdtctl started this command and waits for its socket (follow.go)
		if err := Serve(); err != nil {
			warnf("control server not started: %v", err)
			return
		}
		waitAdopted()
		return
	}
	switch v := os.Getenv("SDT_CONTROL"); v {
	case "off":
		return
	case "", "on":
	default:
		warnf("SDT_CONTROL=%q: want on or off; the control server starts", v)
	}
	arm()
}
