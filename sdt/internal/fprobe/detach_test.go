package fprobe

import (
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// TestDetachInFlight: a hook still running when its probe is taken away returns to an
// instruction that is still there (the stub resumes after the replaced bytes, which
// are the original instructions' boundary), for a small and a large frame, and the
// call completes with the right result.
func TestDetachInFlight(t *testing.T) {
	for _, name := range []string{"Small", "Large"} {
		f := lookup(t, name)
		inHook, release := make(chan bool), make(chan bool)
		if err := f.SetEntry(func(*Func, *Args) {
			inHook <- true
			<-release
		}); err != nil {
			t.Fatal(err)
		}
		done := make(chan int)
		go func() {
			var arr [64]int
			x := 3
			switch name {
			case "Small":
				done <- target.Small(&arr, "hello", 4)
			case "Large":
				_, r := target.Large(&x, false, 2.5)
				done <- r
			}
		}()
		<-inHook
		if err := f.SetEntry(nil); err != nil {
			t.Fatal(err)
		}
		if got := text(f.site, len(f.orig)); string(got) != string(f.orig) {
			t.Fatalf("%s: % x after detach, want % x", name, got, f.orig)
		}
		close(release)
		want := map[string]int{"Small": 4 + 5 + 12, "Large": 2}[name]
		if r := <-done; r != want {
			t.Errorf("%s returned %d after its probe went away in flight, want %d", name, r, want)
		}
	}
}

// TestRefusals: what may not take a probe says why, and nothing is written.
func TestRefusals(t *testing.T) {
	lookup(t, "Small") // skips where function probes cannot work
	x := 1
	if target.LeafLoad(&x) != 1 { // linked in, to be refused
		t.Fatal("LeafLoad")
	}
	for name, why := range map[string]string{
		"runtime.mallocgc":                   "in runtime",
		"reflect.Value.Call":                 "in reflect",
		"sync.(*Mutex).Lock":                 "in sync",
		"github.com/gosdt/gosdt/patch.Apply": "in github.com/gosdt/gosdt",
		pkg + "LeafLoad":                     "no stack check at entry",
		pkg + "NoSuchFunction":               "inlined into every caller",
	} {
		_, err := Lookup(name)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("Lookup(%s): %v, want an error saying %q", name, err, why)
		}
	}
	t.Setenv("SDT_PATCH", "off")
	f := lookup(t, "Sum")
	if err := f.SetEntry(func(*Func, *Args) {}); err != ErrOff {
		t.Errorf("SetEntry with SDT_PATCH=off: %v", err)
	}
	if got := text(f.site, len(f.orig)); string(got) != string(f.orig) {
		t.Errorf("text written with SDT_PATCH=off: % x", got)
	}
}

// TestNestedHook: a hook that calls probed functions (its own among them) does not
// recurse: those calls run, their events are counted as nested, not delivered.
func TestNestedHook(t *testing.T) {
	small, sum := lookup(t, "Small"), lookup(t, "Sum")
	before, sumBefore := small.Stats(), sum.Stats()
	hook := func(f *Func, a *Args) {
		var arr [64]int
		if r := target.Small(&arr, "hello", 1); r != 1+5+3 {
			panic("Small in a hook returned a wrong value")
		}
	}
	if err := Set([]Change{{Func: small, Entry: hook}, {Func: sum, Entry: hook}}); err != nil {
		t.Fatal(err)
	}
	var arr [64]int
	target.Small(&arr, "hello", 2)
	target.Sum([]int{1}, 1)
	if err := Set([]Change{{Func: small}, {Func: sum}}); err != nil {
		t.Fatal(err)
	}
	st := small.Stats()
	if e, n := st.Entries-before.Entries, st.Nested-before.Nested; e != 3 || n != 2 {
		t.Errorf("Small: %d entry events, %d nested; want 3 (1 delivered) and 2", e, n)
	}
	if e := sum.Stats().Entries - sumBefore.Entries; e != 1 {
		t.Errorf("Sum: %d entry events, want 1", e)
	}
}
