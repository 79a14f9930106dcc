// Command sigtoggle fires a probe until it is stopped, and says "on" when a fire first
// reaches its handler: the tests of SDT_MODE=signal start it and send it signals.
package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

var tick = sdt.Define0("sig", "tick")

func main() {
	var once sync.Once
	tick.Attach(func() { once.Do(func() { fmt.Println("on") }) })
	fmt.Println("ready")
	for {
		sdt.Probe0(&tick)
		time.Sleep(time.Millisecond)
	}
}
