package tracedcopy

import "testing"

func TestSplitRename(t *testing.T) {
	for _, tc := range []struct {
		fn, user     string
		ident, named string // named "": not in a copy
	}{
		{"lib.__sdt_fbt0_0t", "lib.Serve", "__sdt_fbt0_0t", "lib.Serve"},
		{"lib.__sdt_fbt0_0t.func1", "lib.Serve", "__sdt_fbt0_0t", "lib.Serve"},
		{"lib.__sdt_fbt0_0t.func2", "lib.Serve", "__sdt_fbt0_0t", "lib.Serve.func1"},
		{"lib.__sdt_fbt0_0t.func12.3", "lib.Serve", "__sdt_fbt0_0t", "lib.Serve.func11.3"},
		{"lib.__sdt_fbt3_14t-range1", "lib.Serve", "__sdt_fbt3_14t", "lib.Serve-range1"},
		{"lib.__sdt_fbt3_14t.gowrap1", "lib.Serve", "__sdt_fbt3_14t", "lib.Serve.gowrap1"},
		{"lib.(*Server).__sdt_fbt0_1t", "lib.(*Server).Handle", "__sdt_fbt0_1t", "lib.(*Server).Handle"},
		{"lib.(*Stack[...]).__sdt_fbt0_1t.func3", "lib.(*Stack[...]).Pop", "__sdt_fbt0_1t", "lib.(*Stack[...]).Pop.func2"},
		{"lib.__sdt_fbt0_2t[...]", "lib.Each[...]", "__sdt_fbt0_2t", "lib.Each[...]"},
		{"lib.__sdt_fbt0_2t[go.shape.string]", "lib.Each[...]", "__sdt_fbt0_2t", "lib.Each[...]"},
		{"lib.__sdt_fbt0_2t[go.shape.map[string]int].func2", "lib.Each[...]", "__sdt_fbt0_2t", "lib.Each[...].func1"},
		{"lib.Serve", "", "", ""},
		{"lib.Serve.func1", "", "", ""},
		{"lib.__sdt_fbt0_0e", "", "", ""},
		{"lib.__sdt_fbt0_0tx", "", "", ""},
		{"lib.__sdt_fbt_0t", "", "", ""},
		{"lib.__sdt_fbt0_t", "", "", ""},
		{"lib.__sdt_fbt0_0", "", "", ""},
	} {
		ident, rest, ok := Split(tc.fn)
		if ok != (tc.named != "") || ident != tc.ident {
			t.Errorf("Split(%q) = %q, %q, %v; want %q", tc.fn, ident, rest, ok, tc.ident)
			continue
		}
		if ok {
			if got := Rename(tc.user, rest); got != tc.named {
				t.Errorf("Rename(%q, %q) from %q = %q, want %q", tc.user, rest, tc.fn, got, tc.named)
			}
		}
	}
	if got := Ident(3, 14) + "t"; got != "__sdt_fbt3_14t" {
		t.Errorf("Ident(3, 14) = %q", got)
	}
}
