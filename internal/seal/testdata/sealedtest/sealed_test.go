// Package sealedtest is tested by package seal's TestToolexec with
// go test -toolexec 'sdtctl toolexec': its test binary must start sealed.
package sealedtest

import (
	"os"
	"testing"

	"github.com/gosdt/gosdt/sdt"
)

var probe = sdt.Define1[int]("sealedtest", "hit", "i")

//go:noinline
func hit(i int) { sdt.Probe1(&probe, i) }

func TestStartsSealed(t *testing.T) {
	if os.Getenv("SEALED_TEST") == "" {
		t.Skip("run by package seal's TestToolexec, built with -toolexec")
	}
	hit(1)
	if d := sdt.Discovery(); !d.Table || d.Presealed == 0 {
		t.Fatalf("the test binary did not start from a site table: %+v", d)
	}
	var n int
	defer probe.Attach(func(int) { n++ })()
	if _, err := sdt.Enable("sealedtest:::hit"); err != nil {
		t.Fatal(err)
	}
	hit(2)
	if n != 1 {
		t.Fatalf("%d fires delivered from the sealed site, want 1", n)
	}
}
