package fbtrt_test

import (
	"testing"

	"github.com/gosdt/gosdt/sdt/control"
	"github.com/gosdt/gosdt/sdt/internal/fbtrt"
)

// An fbt function of two ints, as `sdtctl toolexec` instruments it (internal/fbt).
var (
	allocEntry = fbtrt.DefineFunc("fbt", "alloc__work__entry", "alloc", "alloc.work", "entry", "x\ny", "int\nint")
	allocRet   = fbtrt.DefineFunc("fbt", "alloc__work__return", "alloc", "alloc.work", "return", "latency_ns\npanicking\nr0", "int64\nbool\nint")
)

//go:noinline
func allocWork(x, y int) int {
	var cv fbtrt.Call
	c := allocRet.Begin(&cv)
	if allocEntry.Enabled() {
		allocEntry.Enter(c, 2, int64(x), int64(y), 0, 0)
	}
	if c.EntryFired() {
		fbtrt.In(c, x)
		fbtrt.In(c, y)
		c.Entered()
	}
	r := x*y + 1000
	c.Done()
	if l := c.Elapsed(); allocRet.Enabled() {
		if rc := allocRet.Return(c, l); rc != nil {
			fbtrt.Out(rc, r)
			rc.Returned()
		}
	}
	c.Release()
	return r
}

// TestCallAllocatesNothing: a call of an instrumented function whose entry and return fire
// into a counting aggregation allocates nothing: its Call stays in its frame and its
// arguments on the stack (they escaped through Emit and setAny once: an allocation a
// call, and one per argument of 256 and more).
func TestCallAllocatesNothing(t *testing.T) {
	agg, err := control.OpenAggregation("fbt:alloc::", control.AggOptions{})
	if err != nil {
		t.Skipf("fbt:alloc:: cannot be aggregated here: %v", err)
	}
	defer agg.Close()
	allocWork(1000, 2000)
	if n := testing.AllocsPerRun(1000, func() { allocWork(1000, 2000) }); n != 0 {
		t.Fatalf("%v allocations a call", n)
	}
	rows := agg.Snapshot().Rows
	if len(rows) != 2 || rows[0].Count != 1002 || rows[1].Count != 1002 {
		t.Fatalf("rows %+v, want entry and return 1002 times each", rows)
	}
}
