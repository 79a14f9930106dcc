// Command nap calls nap.Sleep(2) for the time its argument says (a duration): what
// fbt's bpftrace test traces, the function instrumented by nap.rules.
package main

import (
	"fmt"
	"os"
	"time"

	"example.com/fbtex/nap"
)

func main() {
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		nap.Sleep(2)
	}
	fmt.Println("calls", n)
}
