package main

import "fmt"

//go:noinline
func hit(n int) int { return n * 2 }

func main() { fmt.Println("hello", hit(21)) }
