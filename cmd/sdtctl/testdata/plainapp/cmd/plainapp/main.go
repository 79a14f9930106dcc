// Command plainapp is a program built without rules, for sdtctl's tests of run-time
// function probes: it imports sdt only for its control server.
//
//	plainapp serve   one command a line on stdin, "done" on stdout after each:
//	                 calls N (Get N times, half of the keys missing, and MayPanic N times),
//	                 sleep MS (store.Sleep(MS)), mix (store.Mix(-5, -3, 2.5, true, "héllo")),
//	                 count (prints store.Count(db), inlined), run (store.Run(f), N times),
//	                 forever (a goroutine in store.Forever, which never returns),
//	                 tree G N (G goroutines call tree.Handle N times each),
//	                 http G N (G clients make N requests each to a server of plainapp's
//	                 whose handler calls tree.Handle),
//	                 exit HOW (ends the process at once: os.Exit(0), a panic, or SIGKILL
//	                 to itself; HOW is exit, panic or kill)
//	plainapp tree G N   tree G N, then exits
//	plainapp loop    calls Get for ever
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"

	"example.com/plainapp/store"
	"example.com/plainapp/tree"
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
	case "tree":
		g, _ := strconv.Atoi(os.Args[2])
		n, _ := strconv.Atoi(os.Args[3])
		requests(g, n)
	}
}

// requests has g goroutines call tree.Handle n times each.
func requests(g, n int) {
	var wg sync.WaitGroup
	for k := range g {
		wg.Go(func() {
			for i := range n {
				tree.Handle(k*n + i)
			}
		})
	}
	wg.Wait()
}

// serveRequests starts an HTTP server on 127.0.0.1 whose handler calls tree.Handle
// with the request's i, has g clients make n requests each, and stops it.
func serveRequests(g, n int) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(r.URL.Query().Get("i"))
		fmt.Fprintln(w, tree.Handle(i))
	})}
	go srv.Serve(l)
	defer srv.Close()
	url := "http://" + l.Addr().String() + "/?i="
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for k := range g {
		wg.Go(func() {
			for i := range n {
				resp, err := http.Get(url + strconv.Itoa(k*n+i))
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
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
		case "peek":
			fmt.Println(store.Peek(&n))
		case "tree":
			each := 0 // n goroutines, each calls each times
			if len(f) > 2 {
				each, _ = strconv.Atoi(f[2])
			}
			requests(n, each)
		case "http":
			each := 0
			if len(f) > 2 {
				each, _ = strconv.Atoi(f[2])
			}
			if err := serveRequests(n, each); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		case "exit":
			// At once, before the drain's next period: what the process fired
			// must outlive it.
			switch f[len(f)-1] {
			case "exit":
				os.Exit(0)
			case "panic":
				panic("plainapp: exit panic")
			case "kill":
				p, _ := os.FindProcess(os.Getpid())
				p.Kill()
				select {}
			}
		case "run":
			k := 0
			for i := 0; i < n; i++ {
				store.Run(func() { k++ })
			}
		case "forever":
			go store.Forever(func() { select {} })
		}
		fmt.Println("done")
	}
}
