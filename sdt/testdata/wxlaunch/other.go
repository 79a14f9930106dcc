//go:build !(linux && (amd64 || arm64))

// Command wxlaunch installs W^X policies of linux/amd64 and linux/arm64 only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "wxlaunch: linux/amd64 and linux/arm64 only")
	os.Exit(3)
}
