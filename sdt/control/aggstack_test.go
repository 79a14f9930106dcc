package control_test

import (
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/control"
)

// TestAggregateByStack: --by stack folds fires by their call stack: stackOuter's and
// stackInlined's fires are two rows, counted apart, each named by its probe and its
// frames innermost first (inlined callers included).
func TestAggregateByStack(t *testing.T) {
	const spec = "stacktest:::leaf"
	needSwitchable(t, spec)
	agg, err := control.OpenAggregation(spec, control.AggOptions{By: "stack"})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	for i := range 30 {
		stackOuter(i)
		if i%3 == 0 {
			stackInlined(i)
		}
	}
	snap := agg.Snapshot()
	if len(snap.Rows) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(snap.Rows), snap.Rows)
	}
	for i, want := range []struct {
		count  int64
		frames []string
	}{
		{30, []string{"stackLeaf", "stackMiddle", "stackOuter", "TestAggregateByStack"}},
		{10, []string{"stackLeaf", "inlinedMiddle", "stackInlined", "TestAggregateByStack"}},
	} {
		r := snap.Rows[i]
		lines := strings.Split(r.Key, "\n")
		if r.Count != want.count || !strings.HasPrefix(lines[0], "stacktest:") || !strings.HasSuffix(lines[0], ":leaf") {
			t.Fatalf("row %d: %d fires, want %d: %q", i, r.Count, want.count, r.Key)
		}
		for j, fn := range want.frames {
			name, where, _ := strings.Cut(lines[1+j], "\t")
			if !strings.HasSuffix(name, "control_test."+fn) || !strings.Contains(where, "_test.go:") {
				t.Fatalf("row %d frame %d: %q, want %s\n%s", i, j, lines[1+j], fn, r.Key)
			}
		}
	}
}
