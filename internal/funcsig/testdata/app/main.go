package main

import (
	"errors"
	"fmt"
	"os"

	"example.com/app/store"
)

func main() {
	d := &store.DB{}
	n := len(os.Args)
	fmt.Println(d.Get("key"))
	fmt.Println(d.Len(3), store.Narrow(1, 2, 3, 4, 5, 6))
	fmt.Println(store.Floats(1, 2, n))
	fmt.Println(store.Flag(true, "x"), store.Bytes([]byte("a"), &n))
	fmt.Println(store.Ifaces(n, errors.New("e"), nil))
	fmt.Println(store.Structs(store.Small{A: 1}, store.Big{J: 2}, &store.Big{A: 3}))
	fmt.Println(store.Arrays([1]int{1}, [2]int{2, 3}, n))
	fmt.Println(store.Mixed(store.Pair{Z: 1}, complex(1, 2), 7))
	fmt.Println(store.Div(7, n))
	fmt.Println(store.Spill(1, 2, 3, 4, 5, 6, 7, 8, "s", n))
	fmt.Println(store.ManyFloats(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, n))
	fmt.Println(store.MakeAdder(n)(1, "ab"))
	fmt.Println(store.Call(func() error { return nil }, nil, nil))
}

func init() {
	fmt.Println(store.Sum([]int{1, 2}, 3), store.Sum([]float64{1}, 2))
	var b store.Box[string]
	fmt.Println(b.Put("x", 1))
	fmt.Println(store.Each([]string{"a"}, func(string) {})(0))
}
