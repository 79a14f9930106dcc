package sdt_test

import (
	"fmt"

	"github.com/gosdt/gosdt/sdt"
)

// A probe is a package-level definition; Probe1 (or Fire) at the site costs one jump
// while nobody traces it.
var requestDone = sdt.Define2[string, int]("http", "done", "path", "status")

//go:noinline
func serve(path string) {
	status := 200
	sdt.Probe2(&requestDone, path, status)
}

func Example() {
	detach := requestDone.Attach(func(path string, status int) {
		fmt.Println("done", path, status)
	})
	defer detach()

	serve("/quiet") // disabled: nothing happens

	if _, err := sdt.Enable("http:::done"); err != nil {
		fmt.Println(err)
	}
	serve("/traced")
	if _, err := sdt.Disable("http:::done"); err != nil {
		fmt.Println(err)
	}
	serve("/quiet")
	// Output:
	// done /traced 200
}

func ExampleList() {
	infos, _ := sdt.List("http:::done")
	for _, pi := range infos {
		// pi.String() is the full name, provider:module:function:name; the function is
		// where the Probe statement is (sdt_test.serve), when the site could be found.
		fmt.Println(pi.Provider, pi.Name, pi.Args)
	}
	// Output:
	// http done [{path string} {status int}]
}

var handleLatency = sdt.DefineLatency1[int]("http", "handle", "status")

//go:noinline
func handle(path string) (status int) {
	t := handleLatency.Start() // off: no clock read, one jump
	defer func() { handleLatency.End(t, status) }()
	if path == "/missing" {
		return 404
	}
	return 200
}

// A latency probe times a block: End fires with latency_ns first.
func ExampleDefineLatency1() {
	detach := handleLatency.Attach(func(ns int64, status int) {
		fmt.Println("handled", status, ns > 0)
	})
	defer detach()
	handle("/") // off
	sdt.Enable("http:::handle")
	handle("/missing")
	sdt.Disable("http:::handle")
	// Output:
	// handled 404 true
}
