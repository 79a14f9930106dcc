// Command exits is the program package seal's tests seal and trace. "exits report"
// prints what start-up discovery did, as JSON; "exits fire N" waits until a tracer
// has enabled proc:::exit, fires it N times with code i%3, and prints how many fires
// of each code it made; with -until-released it then waits until proc:::exit is
// disabled again and says so.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

var (
	exit  = sdt.Define2[int, string]("proc", "exit", "code", "reason")
	start = sdt.Define0("proc", "start")
	ratio = sdt.Define2[float64, int]("proc", "ratio", "r", "n") // a float: its note stops before it
)

//go:noinline
func fire(n int) (counts [3]int) {
	sdt.Probe0(&start)
	for i := range n {
		sdt.Probe2(&exit, i%3, "done")
		counts[i%3]++
	}
	sdt.Probe2(&ratio, 0.5, n)
	return counts
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: exits report | exits fire N [-until-released]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "report":
		json.NewEncoder(os.Stdout).Encode(sdt.Discovery())
	case "fire":
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		deadline := time.Now().Add(20 * time.Second)
		for !exit.Enabled() {
			if time.Now().After(deadline) {
				fmt.Fprintln(os.Stderr, "proc:::exit was never enabled")
				os.Exit(1)
			}
			time.Sleep(5 * time.Millisecond)
		}
		c := fire(n)
		fmt.Printf("0=%d 1=%d 2=%d\n", c[0], c[1], c[2])
		if len(os.Args) > 3 && os.Args[3] == "-until-released" {
			for exit.Enabled() {
				if time.Now().After(deadline) {
					fmt.Fprintln(os.Stderr, "proc:::exit was never disabled")
					os.Exit(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
			fmt.Println("released")
		}
	}
}
