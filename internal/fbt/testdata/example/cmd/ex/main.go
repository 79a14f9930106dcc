package main

import (
	"fmt"

	"example.com/fbtex/store"
)

func main() {
	db := store.New()
	db.Put("a", 1)
	fmt.Println(db.Get("a"))
	fmt.Println(store.Fib(10), store.Counter(3), store.Pair{1, 2}.Sum())
	fmt.Println(store.Div(7, 2))
	fmt.Println(store.Map([]int{1, 2}, func(x int) string { return fmt.Sprint(x * 2) }))
	var s store.Stack[string]
	s.Push("x")
	fmt.Println(s.Pop())
	fmt.Println(store.Parallel(4, 5), store.Blank(1, ""), db.Len())
}
