// Command plain is hello world: what TestImportCost compares probe with.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("hello", len(os.Args))
}
