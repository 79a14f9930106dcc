// Command last fires last:::word N times (the first argument) as fast as it can and
// ends at once as the second says: exit (os.Exit 0), panic, kill (SIGKILL to
// itself) or term (SIGTERM to itself: a fatal signal). Nothing waits for the reader.
package main

import (
	"os"
	"strconv"
	"syscall"

	"github.com/gosdt/gosdt/sdt"
)

var word = sdt.Define2[int, string]("last", "word", "i", "w")

//go:noinline
func fire(i int) { sdt.Probe2(&word, i, "x") }

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	for i := range n {
		fire(i)
	}
	switch os.Args[2] {
	case "panic":
		panic("the end")
	case "kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	case "term":
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
	os.Exit(0)
}
