// Package app is what sdtctl export's tests instrument (fbt.rules): calls that nest,
// sleep, fail, panic and take a context.Context, a probe fired inside a call and a
// latency probe. It does not import gosdt's fbt: the rules give it its probes.
package app

import (
	"context"
	"fmt"
	"time"

	"example.com/otelapp/work"
	"github.com/gosdt/gosdt/sdt"
)

var (
	item  = sdt.Define2[int, string]("otelapp", "item", "n", "key")
	block = sdt.DefineLatency1[int]("otelapp", "block", "n")
)

// Handle serves request n: it looks its key up, fires item, works n%3+1 ms and checks
// n, whose error it returns.
func Handle(ctx context.Context, n int) (string, error) {
	key := Lookup(ctx, n)
	sdt.Probe2(&item, n, key)
	Work(time.Duration(n%3+1) * time.Millisecond)
	if err := Check(n); err != nil {
		return key, err
	}
	return key, nil
}

// Lookup is called inside Handle, with Handle's context.
func Lookup(ctx context.Context, n int) string {
	return fmt.Sprintf("key-%d", n)
}

// Work sleeps d.
func Work(d time.Duration) {
	time.Sleep(d)
}

// Check fails for a multiple of 5.
func Check(n int) error {
	if n%5 == 0 {
		return fmt.Errorf("n %d is a multiple of 5", n)
	}
	return nil
}

// Crash panics (a write to a nil map).
func Crash(n int) int {
	var m map[int]int
	m[n] = n
	return n
}

// Timed sleeps d in a block a latency probe times.
func Timed(n int, d time.Duration) {
	t := block.Start()
	time.Sleep(d)
	block.End(t, n)
}

// Spin is a call of about n loop iterations of work: the unit of the throughput tests.
// The work is in another package, which the rules leave alone: the same machine code
// runs with Spin's probes on and off.
func Spin(n int) int {
	return work.Loop(n)
}
