// Command selfcheck exercises probes in a process of its own, so that sdt's tests can
// run it built with different flags (-race, -buildmode=pie, -gcflags=all=-N -l, -cover)
// and started with different SDT_* settings. It prints what List saw and exits non-zero
// when a probe misbehaves.
package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

var (
	tick = sdt.Define1[int]("check", "tick", "i")
	name = sdt.Define2[string, int]("check", "name", "s", "n")
)

//go:noinline
func work(n int) {
	for i := 0; i < n; i++ {
		sdt.Probe1(&tick, i)
	}
	name.Fire("work", n)
}

var fires atomic.Int64

func main() {
	infos, err := sdt.List("check:::*")
	must(err)
	var sites, sealed, branch int
	for _, pi := range infos {
		for _, s := range pi.Sites {
			sites++
			if s.State == sdt.BranchOnly {
				branch++
			} else {
				sealed++
			}
		}
	}
	fmt.Printf("probes=%d sites=%d sealed=%d branch=%d\n", len(infos), sites, sealed, branch)

	defer tick.Attach(func(int) { fires.Add(1) })()
	defer name.Attach(func(s string, n int) {
		if s != "work" || n != 5 {
			fail("name fired with %q %d", s, n)
		}
		fires.Add(1)
	})()

	switch os.Getenv("SDT_MODE") {
	case "on":
		expect(6, "SDT_MODE=on, before any Enable")
		_, err := sdt.Disable("check:::*")
		must(err)
		expect(0, "after Disable")
	case "signal":
		self, _ := os.FindProcess(os.Getpid())
		must(self.Signal(syscall.SIGUSR2))
		eventually(6, "after the first SIGUSR2")
		must(self.Signal(syscall.SIGUSR2))
		eventually(0, "after the second SIGUSR2")
	default:
		expect(0, "disabled")
		_, err := sdt.Enable("check:::*")
		must(err)
		expect(6, "enabled")
		_, err = sdt.Disable("check:::*")
		must(err)
		expect(0, "disabled again")
	}
	fmt.Println("ok")
}

// expect runs work(5) and checks how many fires it delivered.
func expect(want int64, when string) {
	fires.Store(0)
	work(5)
	if got := fires.Load(); got != want {
		fail("%s: %d fires, want %d", when, got, want)
	}
}

// eventually repeats expect until it holds: a signal is handled asynchronously.
func eventually(want int64, when string) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		fires.Store(0)
		work(5)
		if got := fires.Load(); got == want {
			return
		} else if time.Now().After(deadline) {
			fail("%s: %d fires, want %d", when, got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Printf("FAIL: "+format+"\n", args...)
	os.Exit(1)
}
