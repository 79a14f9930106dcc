package fbtrt_test

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sdt/control"
	"github.com/gosdt/gosdt/sdt/internal/fbtrt"
)

// An fbt function with an error result and a context.Context parameter, as `sdtctl
// toolexec` instruments it (internal/fbt).
var (
	valuesEntry = fbtrt.DefineFunc("fbt", "values__lookup__entry", "values", "values.lookup", "entry", "ctx", "context.Context")
	valuesRet   = fbtrt.DefineFunc("fbt", "values__lookup__return", "values", "values.lookup", "return", "latency_ns\npanicking\nr0", "int64\nbool\nerror")
)

// typedNil is an error whose Error panics on a nil receiver.
type typedNil struct{ msg string }

func (e *typedNil) Error() string { return e.msg }

//go:noinline
func lookup(ctx context.Context, err error) error {
	var cv fbtrt.Call
	c := valuesRet.Begin(&cv)
	if valuesEntry.Enabled() {
		valuesEntry.Enter(c, 0, 0, 0, 0, 0)
	}
	if c.EntryFired() {
		fbtrt.In(c, ctx)
		c.Entered()
	}
	c.Done()
	if valuesRet.Enabled() {
		if x := valuesRet.Return(c, c.Elapsed()); x != nil {
			fbtrt.Out(x, err)
			x.Returned()
		}
	}
	c.Release()
	return err
}

// TestFBTValues: an fbt probe carries an error result by its text ("<nil>" when nil;
// the type's name when Error panics), a context.Context by its type's name while
// nothing (sdt/otelsdt) says more of it, and panicking as a bool.
func TestFBTValues(t *testing.T) {
	tr, err := control.OpenTrace("fbt:values::", control.TraceOptions{})
	if err != nil {
		t.Skipf("fbt:values:: cannot be traced here: %v", err)
	}
	defer tr.Close()
	var nilPtr *typedNil
	errs := []error{nil, errors.New("no such key"), nilPtr}
	for _, e := range errs {
		lookup(context.Background(), e)
	}
	var all []control.Event
	evs := make([]control.Event, 16)
	for deadline := time.Now().Add(10 * time.Second); len(all) < 2*len(errs) && time.Now().Before(deadline); {
		n, err := tr.Read(evs, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs[:n]...)
	}
	// Records of different Ps may arrive in any order (the goroutine may move between
	// the calls): in the order they fired.
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	var got []string
	for _, ev := range all {
		if len(ev.Args) == 3 {
			// panicking is a bool, as its type says, in every fire: a trace
			// takes a probe's kinds from its first fire when its types do not
			// all tell them (the error), and a consumer prints what it took.
			if p, ok := ev.Args[1].Value.(bool); !ok || p {
				t.Errorf("return's panicking is %T %v, want bool false", ev.Args[1].Value, ev.Args[1].Value)
			}
		}
		a := ev.Args[len(ev.Args)-1]
		got = append(got, a.Value.(string))
	}
	want := []string{"context.Context", "<nil>", "context.Context", "no such key", "context.Context", "*fbtrt_test.typedNil"}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d carries %q, want %q (all: %q)", i, got[i], want[i], got)
		}
	}
}

// countingError counts the calls of its Error.
type countingError struct{ n *int }

func (e countingError) Error() string { *e.n++; return "counted" }

// TestErrorReadWhileTraced: an error result's text is read (its Error called) only
// while a consumer takes the return probe's fires: a probe on only for its hit count
// calls nothing of the program's.
func TestErrorReadWhileTraced(t *testing.T) {
	calls := 0
	err := countingError{&calls}
	if _, e := sdt.Enable("fbt:values::return"); e != nil {
		t.Skipf("fbt:values::return cannot be switched on here: %v", e)
	}
	lookup(context.Background(), err)
	sdt.Disable("fbt:values::return")
	if calls != 0 {
		t.Fatalf("Error called %d times while the probe had no consumer", calls)
	}
	tr, e := control.OpenTrace("fbt:values::return", control.TraceOptions{})
	if e != nil {
		t.Skipf("fbt:values::return cannot be traced here: %v", e)
	}
	defer tr.Close()
	lookup(context.Background(), err)
	if calls != 1 {
		t.Fatalf("Error called %d times while traced, want 1", calls)
	}
}
