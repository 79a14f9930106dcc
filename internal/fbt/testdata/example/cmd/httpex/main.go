// Command httpex calls net/http.(*Client).Do, instrumented by rules, against a
// loopback server, and prints what the fbt hooks saw.
package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/gosdt/gosdt/sdt"
)

func main() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()
	const spec = "fbt:net/http:http.(*Client).Do:"
	var log []string
	detach, n, err := sdt.HookFuncs(spec, 0, sdt.FuncHook{
		Enter: func(c *sdt.Call) {
			req := c.Args()[0].(*http.Request)
			log = append(log, fmt.Sprintf("enter %s %s %s", c.Func(), req.Method, req.URL.Path))
		},
		Exit: func(c *sdt.Call) {
			status := "error"
			if resp, ok := c.Results()[0].(*http.Response); ok && resp != nil {
				status = resp.Status
			}
			log = append(log, fmt.Sprintf("exit %s %s latency>0=%v", c.Func(), status, c.Latency() > 0))
		},
	})
	if err != nil {
		fmt.Println("hook:", n, err)
		os.Exit(1)
	}
	defer detach()
	get := func(path string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		resp.Body.Close()
	}
	get("/off")
	if _, err := sdt.Enable(spec); err != nil {
		fmt.Println("enable:", err)
		os.Exit(1)
	}
	get("/a")
	get("/missing")
	sdt.Disable(spec)
	get("/off")
	infos, _ := sdt.List(spec)
	for _, pi := range infos {
		if pi.Kind == "runtime" {
			continue // what rules did not instrument
		}
		for _, s := range pi.Sites {
			fmt.Println(pi, s.State, s.Hits > 0)
		}
	}
	for _, l := range log {
		fmt.Println(l)
	}
}
