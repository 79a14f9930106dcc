package ctlserver

import (
	"os"
	"time"

	"github.com/gosdt/gosdt/sdt/internal/consume"
)

// When the socket is bound. sdt's init calls Start; binding waits
// startDelay more, on a timer. So a process that ends sooner (a short command, a tool
// run under go build -toolexec) touches no file and binds nothing, and a main that
// calls Stop first thing is never reachable; sdtctl waits for a process younger than
// that. Until
// the timer fires nothing runs: it is one runtime timer.
const startDelay = 20 * time.Millisecond

// Start starts the control plane: package sdt's init calls it, the registry complete,
// and a program need not. Unless SDT_CONTROL=off, it arms the automatic Serve. Calls
// after the first do nothing.
func Start() {
	if !consume.Start() {
		return
	}
	if consume.StartFollow() {
		// sdtctl started this command and waits for its socket (follow.go)
		if err := Serve(); err != nil {
			consume.Warnf("control server not started: %v", err)
			return
		}
		consume.WaitAdopted()
		return
	}
	switch v := os.Getenv("SDT_CONTROL"); v {
	case "off":
		return
	case "", "on":
	default:
		consume.Warnf("SDT_CONTROL=%q: want on or off; the control server starts", v)
	}
	arm()
}
