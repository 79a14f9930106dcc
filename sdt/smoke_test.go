package sdt_test

import (
	"testing"

	"github.com/gosdt/gosdt/sdt"
)

var smokeExit = sdt.Define1[int]("smoke", "exit", "reason")

//go:noinline
func smokeWorker(n int) (s int) {
	for i := 0; i < n; i++ {
		sdt.Probe1(&smokeExit, i)
		s += i
	}
	return s
}

func TestSmoke(t *testing.T) {
	infos, err := sdt.List("smoke:::*")
	if err != nil {
		t.Fatal(err)
	}
	for _, pi := range infos {
		t.Logf("%s args=%v enabled=%v hits=%d", pi, pi.Args, pi.Enabled, pi.Hits)
		for _, s := range pi.Sites {
			t.Logf("  %#x %s:%d %s %s %s", s.Addr, s.File, s.Line, s.Kind, s.State, s.Reason)
		}
	}
	got := 0
	defer smokeExit.Attach(func(r int) { got++ })()
	smokeWorker(10)
	if got != 0 {
		t.Fatalf("disabled: got %d fires", got)
	}
	n, err := sdt.Enable("smoke:::exit")
	t.Logf("enable: %d %v", n, err)
	smokeWorker(10)
	if got != 10 {
		t.Fatalf("enabled: got %d fires, want 10", got)
	}
	n, err = sdt.Disable("smoke:::exit")
	t.Logf("disable: %d %v", n, err)
	smokeWorker(10)
	if got != 10 {
		t.Fatalf("disabled again: got %d fires, want 10", got)
	}
}
