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
		if err := f.SetEntry(func(*Func, Args) {
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
		if got := text(f.Entry, len(f.orig)); string(got) != string(f.orig) {
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
	for name, why := range map[string]string{
		"runtime.mallocgc":                   "in runtime",
		"reflect.Value.Call":                 "in reflect",
		"sync.(*Mutex).Lock":                 "in sync",
		"github.com/gosdt/gosdt/patch.Apply": "in github.com/gosdt/gosdt",
		pkg + "Leaf":                         "no stack check at entry",
		pkg + "NoSuchFunction":               "inlined into every caller",
	} {
		_, err := Lookup(name)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("Lookup(%s): %v, want an error saying %q", name, err, why)
		}
	}
	t.Setenv("SDT_PATCH", "off")
	f := lookup(t, "Sum")
	if err := f.SetEntry(func(*Func, Args) {}); err != ErrOff {
		t.Errorf("SetEntry with SDT_PATCH=off: %v", err)
	}
	if got := text(f.Entry, len(f.orig)); string(got) != string(f.orig) {
		t.Errorf("text written with SDT_PATCH=off: % x", got)
	}
}
