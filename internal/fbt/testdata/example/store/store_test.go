package store

import (
	"testing"

	"github.com/gosdt/gosdt/sdt"
)

// TestFibProbes runs under go test -toolexec "sdtctl toolexec -rules ...": the
// package's own test binary has its functions instrumented.
func TestFibProbes(t *testing.T) {
	n := 0
	detach, _, err := sdt.HookFuncs("fbt:example.com/fbtex/store:store.Fib:", 0, sdt.FuncHook{Exit: func(*sdt.Call) { n++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer detach()
	if _, err := sdt.Enable("fbt:example.com/fbtex/store:store.Fib:"); err != nil {
		t.Fatal(err)
	}
	defer sdt.Disable("fbt:example.com/fbtex/store:store.Fib:")
	if got := Fib(10); got != 55 || n != 177 {
		t.Fatalf("Fib(10) = %d with %d returns, want 55 with 177", got, n)
	}
}
