// Command plainapp is a program built without rules, for sdtctl's tests of run-time
// function probes: it imports sdt only for its control server.
//
//	plainapp serve   one command a line on stdin, "done" on stdout after each:
//	                 calls N (Get N times, half of the keys missing, and MayPanic N times),
//	                 sleep MS (store.Sleep(MS)), mix (store.Mix(-5, -3, 2.5, true, "héllo")),
//	                 count (prints store.Count(db), inlined), run (store.Run(f), N times)
//	plainapp loop    calls Get for ever
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"example.com/plainapp/store"
	_ "github.com/gosdt/gosdt/sdt"
)

var db = store.New("alpha", "1", "beta", "2")

func main() {
	switch os.Args[1] {
	case "loop":
		for {
			db.Get("alpha")
		}
	case "serve":
		serve()
	}
}

func serve() {
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		n := 0
		if len(f) > 1 {
			n, _ = strconv.Atoi(f[1])
		}
		switch f[0] {
		case "calls":
			for i := range n {
				db.Get([]string{"alpha", "gamma"}[i%2])
				func() {
					defer func() { recover() }()
					store.MayPanic(i)
				}()
			}
		case "sleep":
			store.Sleep(n)
		case "count":
			fmt.Println(store.Count(db))
		case "mix":
			store.Mix(-5, -3, 2.5, true, "héllo")
		case "run":
			k := 0
			for i := 0; i < n; i++ {
				store.Run(func() { k++ })
			}
		}
		fmt.Println("done")
	}
}
