package spec_test

import (
	"fmt"

	"github.com/gosdt/gosdt/internal/spec"
)

func Example() {
	s, err := spec.Parse("main:worker:exit")
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	fmt.Println(s.Match("gosdt", "main", "worker", "exit"))
	fmt.Println(s.Match("gosdt", "main", "worker", "entry"))

	s, _ = spec.Parse("github.com/x/*:y.(*T).*:entry")
	fmt.Println(s.Match("gosdt", "github.com/x/y", "y.(*T).Method", "entry"))

	_, err = spec.Parse("a:b:c:d:e")
	fmt.Println(err)
	// Output:
	// :main:worker:exit
	// true
	// false
	// true
	// malformed probe spec "a:b:c:d:e": more than 4 fields
}
