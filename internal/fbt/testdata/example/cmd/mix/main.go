// Command mix runs package lib's functions once per line of stdin, for sdtctl: its
// hand-written probes share functions with rules' fbt probes (mix.rules).
package main

import (
	"bufio"
	"fmt"
	"os"

	"example.com/fbtex/lib"
)

func main() {
	fmt.Println("ready")
	var s lib.Server
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		lib.Serve(3)
		s.Handle(2)
		lib.Each([]string{"a", "b"}, func(string) {})
		fmt.Println("done")
	}
}
