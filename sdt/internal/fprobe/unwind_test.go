package fprobe

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// TestEntryUnwind: from inside a hook, the unwinder goes through the entry stub to the
// probed function and on to its real caller: no frame skipped, none invented.
func TestEntryUnwind(t *testing.T) {
	for _, name := range []string{"Small", "Large"} {
		f := lookup(t, name)
		var stack []string
		if err := f.SetEntry(func(*Func, *Args) {
			pcs := make([]uintptr, 64)
			frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
			for {
				fr, more := frames.Next()
				stack = append(stack, fr.Function)
				if !more {
					break
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		callTarget(name)
		if err := f.SetEntry(nil); err != nil {
			t.Fatal(err)
		}
		const self = "github.com/gosdt/gosdt/sdt/internal/fprobe."
		i := slices.Index(stack, pkg+name)
		if i < 1 || i+2 >= len(stack) || !strings.HasPrefix(stack[i-1], self+"entryBody") ||
			stack[i+1] != self+"callTarget" || stack[i+2] != self+"TestEntryUnwind" {
			t.Errorf("%s: the hook's stack:\n\t%s", name, strings.Join(stack, "\n\t"))
		}
	}
}

//go:noinline
func callTarget(name string) {
	var arr [64]int
	x := 1
	switch name {
	case "Small":
		target.Small(&arr, "hello", 1)
	case "Large":
		target.Large(&x, false, 2.5)
	}
}
