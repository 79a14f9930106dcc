package spec

import "testing"

func TestSplitFunc(t *testing.T) {
	for _, c := range []struct{ sym, mod, fn string }{
		{"main.worker", "main", "main.worker"},
		{"main.worker.func1", "main", "main.worker.func1"},
		{"github.com/x/y.(*T).M", "github.com/x/y", "y.(*T).M"},
		{"github.com/x/y.F[...]", "github.com/x/y", "y.F[...]"},
		{"github.com/x/y.F[go.shape.struct { a/b.T }]", "github.com/x/y", "y.F[go.shape.struct { a/b.T }]"},
		{"runtime.gcWriteBarrier", "runtime", "runtime.gcWriteBarrier"},
		{"noDot", "noDot", "noDot"},
	} {
		mod, fn := SplitFunc(c.sym)
		if mod != c.mod || fn != c.fn {
			t.Errorf("SplitFunc(%q) = %q, %q; want %q, %q", c.sym, mod, fn, c.mod, c.fn)
		}
	}
}
