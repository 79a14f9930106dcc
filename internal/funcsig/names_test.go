package funcsig

import "testing"

func TestDictIndex(t *testing.T) {
	for name, want := range map[string]int{
		"example.com/a/b.F[go.shape.int]":                                0,
		"example.com/a/b.(*T[go.shape.*example.com/a/c.X]).M":            1,
		"example.com/a/b.T[go.shape.struct { X int; Y string }].M":       1,
		"example.com/a/b.F[go.shape.int].func1":                          -1, // a closure: the dictionary is in its context
		"example.com/a/b.T[go.shape.int].M.func2":                        -1,
		"example.com/a/b.F[go.shape.int].gowrap1":                        -1,
		"example.com/a/b.F[int]":                                         -1, // the instantiation that calls the shaped function
		"example.com/a/b.(*T).M":                                         -1,
		"slices.SortFunc[go.shape.[]example.com/a.R,go.shape.struct {}]": 0,
		// go1.27's generic methods: the dictionary after the receiver.
		"example.com/a/b.(*Box).Map[go.shape.string]":           1,
		"example.com/a/b.G[go.shape.int].Conv[go.shape.string]": 1,
		"example.com/a/b.(*Box).Map[go.shape.string].func1":     -1,
	} {
		if got := dictIndex(name); got != want {
			t.Errorf("dictIndex(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestShortType(t *testing.T) {
	for in, want := range map[string]string{
		"*example.com/app/store.DB": "*store.DB",
		"[]uint8":                   "[]uint8",
		"map[example.com/a/k.K]example.com/b/v.V":           "map[k.K]v.V",
		"func(example.com/a/b.T, string) error":             "func(b.T, string) error",
		"go.shape.*internal/abi.Type":                       "go.shape.*abi.Type",
		"struct { X example.com/a.T; Y *golang.org/x/y.Z }": "struct { X a.T; Y *y.Z }",
	} {
		if got := ShortType(in); got != want {
			t.Errorf("ShortType(%q) = %q, want %q", in, got, want)
		}
	}
}
