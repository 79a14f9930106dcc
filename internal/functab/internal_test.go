package functab

import (
	"encoding/binary"
	"math"
	"runtime"
	"testing"
)

// TestMaxValue: the fast reading of a pc-value table's largest value agrees with
// EachValue's on every inline index table of this test binary.
func TestMaxValue(t *testing.T) {
	m := Self()
	if m.Table == nil || m.NoInline != "" {
		t.Skipf("no inline trees read on %s/%s: %s", runtime.GOOS, runtime.GOARCH, m.NoInline)
	}
	tab, tables := m.Table, 0
	for i := 0; i < tab.Len(); i++ {
		_, pcs, err := tab.InlineTree(i)
		if err != nil {
			t.Fatal(err)
		}
		if pcs == nil {
			continue
		}
		tables++
		want := int32(-1)
		if err := EachValue(pcs, tab.Quantum, func(_, _ uint32, v int32) bool { want = max(want, v); return true }); err != nil {
			t.Fatal(err)
		}
		if got, err := maxValue(pcs); got != want || err != nil {
			t.Fatalf("%s: maxValue %d, %v; want %d", tab.Name(i), got, err, want)
		}
	}
	if tables == 0 {
		t.Fatal("no function with an inline tree")
	}
}

// TestCheckInlineTrees: a pc quantum the tables do not have decodes them wrong, and
// the check against the runtime's frames says so.
func TestCheckInlineTrees(t *testing.T) {
	m := Self()
	if m.Table == nil || m.NoInline != "" {
		t.Skipf("no inline trees read on %s/%s: %s", runtime.GOOS, runtime.GOARCH, m.NoInline)
	}
	if err := m.Table.checkInlineTrees(); err != nil {
		t.Fatal(err)
	}
	bad := *m.Table
	bad.Quantum++
	if err := bad.checkInlineTrees(); err == nil {
		t.Error("checkInlineTrees: no error with a wrong pc quantum")
	} else {
		t.Log(err)
	}
}

// TestPrintedAs: names compare as the runtime prints them, generic ones with "[...]".
func TestPrintedAs(t *testing.T) {
	for c, want := range map[[2]string]bool{ // {name in the table, as printed}
		{"main.f", "main.f"}:                          true,
		{"main.f", "main.g"}:                          false,
		{"p.F[go.shape.int]", "p.F[...]"}:             true,
		{"p.(*T[go.shape.int]).M", "p.(*T[...]).M"}:   true,
		{"p.F[go.shape.int].func1", "p.F[...].func1"}: true,
		{"p.F[go.shape.int].func1", "p.F[...].func2"}: false,
		{"p.F[go.shape.int]", "p.F[go.shape.int]"}:    false,
		{"p.F[go.shape.int]", "p.G[...]"}:             false,
		{"p.F[", "p.F["}:                              true,
		{"p.F]x[", "p.F]x["}:                          true,
		{"p.F[p.T[go.shape.int]]", "p.F[...]"}:        true,
	} {
		if got := PrintedAs([]byte(c[0]), c[1]); got != want {
			t.Errorf("PrintedAs(%q, %q) = %v, want %v", c[0], c[1], got, want)
		}
	}
}

// TestFirstInRange: the search for a word in range (assembly on amd64) finds the
// first 16 bytes that hold one, at every offset and alignment of b, for ranges that
// wrap, are empty or take every word, as the word-by-word rule says.
func TestFirstInRange(t *testing.T) {
	g := make([]byte, 300)
	for i := range g {
		g[i] = byte(i*7 + i>>2)
	}
	words := func(b []byte, lo, span uint32) int {
		for i := 0; i+16 <= len(b); i += 16 {
			for k := 0; k < 16; k += 4 {
				if binary.LittleEndian.Uint32(b[i+k:])-lo <= span {
					return i
				}
			}
		}
		return len(b) &^ 15
	}
	ranges := [][2]uint32{{0, 0}, {0, math.MaxUint32}, {math.MaxUint32, 1}, {0x40302010, 0x100}, {0x80000000, 0x7fffffff}}
	for at := 0; at < 64; at++ {
		for _, w := range []uint32{0x40302010, 0x80000001, 0xffffffff, 0} {
			b := append([]byte(nil), g...)
			binary.LittleEndian.PutUint32(b[at*4:], w)
			ranges = append(ranges, [2]uint32{w, 0}, [2]uint32{w - 3, 5})
			for _, r := range ranges {
				for _, from := range []int{0, 1, 5, 16} {
					if got, want := firstInRange(b[from:], r[0], r[1]), words(b[from:], r[0], r[1]); got != want {
						t.Fatalf("word %#x at %d, from %d, range %#x+%#x: %d, want %d", w, at*4, from, r[0], r[1], got, want)
					}
				}
			}
		}
	}
}

// TestPrintName: as each Go's runtime prints a name; go1.27 has generic methods, of a
// plain type and of a generic one, and prints two groups where a name has two.
func TestPrintName(t *testing.T) {
	for _, c := range []struct{ name, v, want string }{
		{"p.F[go.shape.int]", "go1.26.8", "p.F[...]"},
		{"p.F[go.shape.int]", "go1.27.3", "p.F[...]"},
		{"p.F[p.T[go.shape.int]]", "go1.27.3", "p.F[...]"},
		{"p.(*Box).Map[go.shape.string]", "go1.27.3", "p.(*Box).Map[...]"},
		{"p.G[go.shape.int].Conv[go.shape.string]", "go1.27.3", "p.G[...].Conv[...]"},
		{"p.G[go.shape.int].Conv[go.shape.string].func1", "go1.27.3", "p.G[...].Conv[...].func1"},
		{"p.(*G[go.shape.int]).Conv[map[go.shape.string]int]", "go1.27.3", "p.(*G[...]).Conv[...]"},
		{"type:.eq.[16]p.P[p.n[int]]", "go1.27.3", "type:.eq.[...]p.P[...]"},
		{"type:.eq.[16]p.P[p.n[int]]", "go1.26.8", "type:.eq.[...]"},
		{"p.F]x[", "go1.27.3", "p.F]x["},
		{"p.F[a]]b[c]", "go1.27.3", "p.F[a]]b[c]"},
	} {
		if got := PrintName(c.name, c.v); got != c.want {
			t.Errorf("PrintName(%q, %s) = %q, want %q", c.name, c.v, got, c.want)
		}
	}
}
