// Command defs defines a probe of every arity, for the tests of offline.Definitions:
// Define0 is the one call without a dictionary, Define3..Define6 pass more strings
// than amd64 has argument registers for, and equal lengths ("a", "b") let the compiler
// copy one length register into another. The order is not the arities'.
package main

import "github.com/gosdt/gosdt/sdt"

var (
	three = sdt.Define3[int, int, bool]("defs", "three", "a", "bb", "ccc")
	zero  = sdt.Define0("defs", "zero")
	five  = sdt.Define5[uint8, int, int, int, int]("other", "five", "a", "b", "c", "d", "e")
	one   = sdt.Define1[int]("defs", "one", "a")
	six   = sdt.Define6[int, int, int, int, int, int]("defs", "six", "a", "b", "c", "d", "e", "f")
	two   = sdt.Define2[string, int]("defs", "two", "a", "b")
	four  = sdt.Define4[int, string, int, string]("defs", "four", "a", "b", "c", "d")
)

func main() {
	zero.Fire()
	one.Fire(1)
	two.Fire("x", 2)
	three.Fire(1, 2, true)
	four.Fire(1, "x", 2, "y")
	five.Fire(1, 2, 3, 4, 5)
	six.Fire(1, 2, 3, 4, 5, 6)
}
