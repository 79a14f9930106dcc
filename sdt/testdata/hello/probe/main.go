// Command probe is hello world with one probe: what importing sdt costs a program
// (TestImportCost).
package main

import (
	"fmt"
	"os"

	"github.com/gosdt/gosdt/sdt"
)

var hello = sdt.Define1[int]("hello", "main", "args")

func main() {
	sdt.Probe1(&hello, len(os.Args))
	fmt.Println("hello", len(os.Args))
}
