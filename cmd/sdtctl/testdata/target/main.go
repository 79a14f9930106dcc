// Command target is the traced program of sdtctl's end-to-end tests: it fires
// e2e:::tick with a counter and a name, forever, slowly enough to be traced.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

var tick = sdt.Define2[int, string]("e2e", "tick", "i", "name")

var names = []string{"alpha", "beta"}

//go:noinline
func step(i int) { sdt.Probe2(&tick, i, names[i%2]) }

func main() {
	fmt.Println("ready")
	for i := 0; ; i++ {
		step(i)
		if i%64 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	_ = os.Stdout
}
