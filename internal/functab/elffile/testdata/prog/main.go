// Command prog is a small program whose function table internal/functab reads.
package main

import (
	"fmt"
	"os"
)

func double(x int) int {
	if x > 100 {
		fmt.Fprintln(os.Stderr, "big")
	}
	return 2 * x
}

//go:noinline
func caller(x int) int { return double(x) + len(os.Args) }

func main() { fmt.Println(caller(len(os.Args))) }
