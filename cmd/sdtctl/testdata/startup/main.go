// Command startup is a short command for sdtctl trace|stat -- CMD: a probe fires in
// a package's init (lib), then main fires boot:::step N times (N the first
// argument), prints "done", waits a moment and exits with the status of the second argument.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	_ "github.com/gosdt/gosdt/cmd/sdtctl/testdata/startup/lib"
	"github.com/gosdt/gosdt/sdt"
)

var step = sdt.Define1[int]("boot", "step", "i")

//go:noinline
func fire(i int) { sdt.Probe1(&step, i) }

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	for i := range n {
		fire(i)
	}
	fmt.Println("done")
	// What fires in the last moments before exit may still be in the process's
	// buffers when it ends: Go has no exit hook a library may use to flush them.
	time.Sleep(300 * time.Millisecond)
	code, _ := strconv.Atoi(os.Args[2])
	os.Exit(code)
}
