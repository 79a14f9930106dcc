package fprobe

import (
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

const pkg = "github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target."

func lookup(t *testing.T, name string) *Func {
	t.Helper()
	if !patch.Supported() {
		testutil.Skip(t, "patch", "function probes need text patching (linux/amd64, linux/arm64)")
	}
	if host == nil {
		testutil.Skip(t, "patch", "function probes have stubs for linux/amd64 and linux/arm64 only, not "+runtime.GOARCH)
	}
	f, err := Lookup(pkg + name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestEntryArgs: each argument kind arrives in the hook as the caller passed it, and
// the function still sees it whole.
func TestEntryArgs(t *testing.T) {
	small, narrow, large := lookup(t, "Small"), lookup(t, "Narrow"), lookup(t, "Large")
	var got sync.Map
	hook := func(f *Func, a *Args) {
		w := make([]uint64, a.Words())
		for i := range w {
			w[i] = a.Word(i)
		}
		got.Store(f.Name, w)
	}
	for _, f := range []*Func{small, narrow, large} {
		if err := f.SetEntry(hook); err != nil {
			t.Fatal(err)
		}
		defer f.SetEntry(nil)
	}
	var arr [64]int
	s := strings.Repeat("x", 5)
	if r := target.Small(&arr, s, 7); r != 7+5+21 || arr[0] != r {
		t.Errorf("Small returned %d, arr[0] %d", r, arr[0])
	}
	if r := target.Narrow(-5, 65000, -100000, true, 1.5); r != target.Leaf(-5+65000-100000, 1)+1 {
		t.Errorf("Narrow returned %d", r)
	}
	x := 42
	if p, r := target.Large(&x, false, 2.5); p != &x || r != 2 {
		t.Errorf("Large returned %p %d", p, r)
	}
	want := map[string][]uint64{
		small.Name:  {uint64(uintptr(unsafe.Pointer(&arr))), uint64(uintptr(unsafe.Pointer(unsafe.StringData(s)))), 5, 7},
		narrow.Name: {uint64(uint8(0xFB)), 65000, uint64(uint32(0xFFFE7960)), 1, uint64(math.Float32bits(1.5))},
		large.Name:  {uint64(uintptr(unsafe.Pointer(&x))), 0, math.Float64bits(2.5)},
	}
	for name, w := range want {
		v, ok := got.Load(name)
		if !ok {
			t.Errorf("%s: no entry event", name)
			continue
		}
		if g := v.([]uint64); !equal(g, w) {
			t.Errorf("%s: args %#x, want %#x", name, g, w)
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEntryExactCount: N calls while the probe is on give exactly N entry events, and
// none once it is off; the text is the original again.
func TestEntryExactCount(t *testing.T) {
	f := lookup(t, "Small")
	var n atomic.Int64
	if err := f.SetEntry(func(f *Func, a *Args) {
		if a.Word(2) != 5 {
			panic("bad string length")
		}
		n.Add(1)
	}); err != nil {
		t.Fatal(err)
	}
	const G, N = 4, 20000
	var wg sync.WaitGroup
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var arr [64]int
			for i := 0; i < N; i++ {
				if r := target.Small(&arr, "hello", i); r != i+5+3*i {
					panic("Small returned a wrong value")
				}
			}
		}()
	}
	wg.Wait()
	if err := f.SetEntry(nil); err != nil {
		t.Fatal(err)
	}
	var arr [64]int
	target.Small(&arr, "hello", 1)
	if got := n.Load(); got != G*N {
		t.Errorf("%d entry events for %d calls", got, G*N)
	}
	if !equal8(text(f.site, len(f.orig)), f.orig) {
		t.Errorf("text after detach: % x, want % x", text(f.site, len(f.orig)), f.orig)
	}
	runtime.GC()
}

func text(addr uintptr, n int) []byte { return append([]byte(nil), mem(addr, n)...) }

func equal8(a, b []byte) bool { return string(a) == string(b) }
