package functab_test

import (
	"bytes"
	"runtime"
	"slices"
	"testing"

	"github.com/gosdt/gosdt/internal/functab"
)

// liveTable is this test binary's own table, or a skip where the platform has none.
func liveTable(t *testing.T) (functab.Module, *functab.Table) {
	t.Helper()
	m := functab.Self()
	if m.Table == nil {
		if runtime.GOARCH == "wasm" {
			t.Skip("wasm: pcs are not addresses of linear memory")
		}
		t.Fatal("Self: no function table")
	}
	return m, m.Table
}

// TestSelfAgreesWithRuntime reads every function of the running program and compares
// it with what the runtime says of the same pcs.
func TestSelfAgreesWithRuntime(t *testing.T) {
	m, tab := liveTable(t)
	if !m.NamesOK {
		t.Fatal("names did not check out against the runtime's")
	}
	if (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") && m.NoInline != "" {
		t.Errorf("inline trees not read: %s", m.NoInline)
	}
	compared := 0
	for i := 0; i < tab.Len(); i++ {
		entry, end := tab.Entry(i), tab.End(i)
		if end < entry {
			t.Fatalf("function %d: end %#x before entry %#x", i, end, entry)
		}
		if i+1 < tab.Len() && tab.Entry(i+1) == entry {
			continue // an alias at the same entry (C code of the race runtime): FuncForPC names the last
		}
		f := runtime.FuncForPC(uintptr(entry))
		if f == nil || uint64(f.Entry()) != entry {
			t.Fatalf("function %d at %#x: the runtime has no function there", i, entry)
		}
		if !functab.PrintedAs(tab.Name(i), f.Name()) {
			t.Fatalf("function %d at %#x: name %q, runtime %q", i, entry, tab.Name(i), f.Name())
		}
		if end > entry {
			if got := tab.Find(end - 1); got != i && tab.Entry(got) != entry {
				t.Fatalf("Find(%#x) = %d, want %d", end-1, got, i)
			}
		}
		wantFile, wantLine := f.FileLine(uintptr(entry))
		if wantFile == "?" {
			wantFile = ""
		}
		if file, line := tab.FileLine(i, entry); file != wantFile || line != wantLine {
			t.Fatalf("%s: FileLine(entry) = %s:%d, runtime %s:%d", f.Name(), file, line, wantFile, wantLine)
		}
		if d := tab.SPDelta(i, entry); d != 0 && d != -1 {
			t.Fatalf("%s: SP delta %d at entry", f.Name(), d)
		}
		compared++
	}
	if compared < 1000 {
		t.Errorf("compared %d functions, want many", compared)
	}
	if got := tab.Find(tab.Text - 1); got != -1 {
		t.Errorf("Find before the text = %d, want -1", got)
	}
}

//go:noinline
func callee(x int) int { return inlined(x) + 1 }

func inlined(x int) int { return x * 3 }

// TestFramesAgreeWithCallersFrames expands the inline tree at pcs in inlined code of
// the runtime's and this package's functions, as runtime.CallersFrames does.
func TestFramesAgreeWithCallersFrames(t *testing.T) {
	m, tab := liveTable(t)
	if m.NoInline != "" {
		t.Skipf("no inline trees here: %s", m.NoInline)
	}
	checked := 0
	for i := 0; i < tab.Len() && checked < 200; i++ {
		tree, pcs, err := tab.InlineTree(i)
		if err != nil {
			t.Fatal(err)
		}
		if tree == nil {
			continue
		}
		functab.EachValue(pcs, tab.Quantum, func(lo, hi uint32, v int32) bool {
			if v < 0 || lo == hi {
				return true
			}
			pc := tab.Entry(i) + uint64(lo)
			got := tab.Frames(pc)
			var want []functab.Frame
			frames := runtime.CallersFrames([]uintptr{uintptr(pc) + 1, 0})
			for {
				f, more := frames.Next()
				if f.Function == "" {
					break
				}
				want = append(want, functab.Frame{Func: f.Function, File: f.File, Line: f.Line})
				if !more {
					break
				}
			}
			// CallersFrames elides the runtime's wrappers; compare what it shows.
			got = slices.DeleteFunc(got, func(f functab.Frame) bool {
				return !slices.ContainsFunc(want, func(w functab.Frame) bool { return functab.PrintedAs([]byte(f.Func), w.Func) })
			})
			if len(got) != len(want) {
				t.Fatalf("%s+%#x: frames %v, CallersFrames %v", tab.Name(i), lo, got, want)
			}
			for k := range got {
				if !functab.PrintedAs([]byte(got[k].Func), want[k].Func) || got[k].File != want[k].File || got[k].Line != want[k].Line {
					t.Fatalf("%s+%#x: frame %d %+v, CallersFrames %+v", tab.Name(i), lo, k, got[k], want[k])
				}
			}
			checked++
			return false
		})
	}
	if checked == 0 {
		t.Fatal("no inlined pc checked")
	}
	_ = callee(1)
}

// TestInlinersBothWays: the search from the trees' side and the one through every
// record find the same functions.
func TestInlinersBothWays(t *testing.T) {
	m, tab := liveTable(t)
	if m.NoInline != "" {
		t.Skipf("no inline trees here: %s", m.NoInline)
	}
	for _, prefix := range []string{"sync.", "runtime.", "github.com/gosdt/gosdt/internal/functab_test."} {
		all := func([]byte) bool { return true }
		byRecord, err := tab.InlinersByRecord([]byte(prefix), all)
		if err != nil {
			t.Fatal(err)
		}
		byTree, err := tab.InlinersByTree([]byte(prefix), all)
		if err != nil {
			t.Logf("%s: by tree: %v (Inliners reads the records then)", prefix, err)
			continue
		}
		if !slices.Equal(byTree, byRecord) {
			t.Errorf("%s: by tree %d ranges, by record %d", prefix, len(byTree), len(byRecord))
		}
		if len(byRecord) == 0 && prefix == "runtime." {
			t.Errorf("%s: no function inlined one of its", prefix)
		}
	}
}

// TestNewRefuses: tables of other layouts are refused with ErrLayout, not misread.
func TestNewRefuses(t *testing.T) {
	good := make([]byte, 200)
	copy(good, []byte{0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8})
	for name, b := range map[string][]byte{
		"short":     good[:20],
		"old magic": append([]byte{0xf0, 0xff, 0xff, 0xff}, good[4:]...),
		"32-bit":    append(append([]byte(nil), good[:7]...), append([]byte{4}, good[8:]...)...),
		"no funcs":  good,
	} {
		if _, err := functab.New(b, 0, nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("not read")) {
			t.Errorf("%s: %v, want an ErrLayout", name, err)
		}
	}
}
