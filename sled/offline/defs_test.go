package offline_test

import (
	"debug/elf"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gosdt/gosdt/arch/amd64"
	"github.com/gosdt/gosdt/arch/arm64"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/sled/offline"
)

// wantDef is a definition as the source spells it, with the variable it is stored in.
type wantDef struct {
	sym            string
	provider, name string
	args           []string
}

// argRoom is how many argument names a generic Define passes in registers: of Go's
// integer argument registers the dictionary takes one, provider and name two strings
// (two registers each).
var argRoom = map[string]int{
	"amd64": (len(amd64.Offline.ArgRegs)-1)/2 - 2,
	"arm64": (len(arm64.Offline.ArgRegs)-1)/2 - 2,
}

// defsPrograms are the programs TestDefinitions reads, with the definitions in each.
var defsPrograms = []struct {
	pkg  string
	want []wantDef
}{
	{"github.com/gosdt/gosdt/cmd/sdtctl/testdata/target", []wantDef{
		{"main.tick", "e2e", "tick", []string{"i", "name"}},
	}},
	{"github.com/gosdt/gosdt/sdt/testdata/selfcheck", []wantDef{
		{"main.tick", "check", "tick", []string{"i"}},
		{"main.name", "check", "name", []string{"s", "n"}},
	}},
	{"github.com/gosdt/gosdt/sled/offline/testdata/defs", []wantDef{
		{"main.zero", "defs", "zero", nil},
		{"main.one", "defs", "one", []string{"a"}},
		{"main.two", "defs", "two", []string{"a", "b"}},
		{"main.three", "defs", "three", []string{"a", "bb", "ccc"}},
		{"main.four", "defs", "four", []string{"a", "b", "c", "d"}},
		{"main.five", "other", "five", []string{"a", "b", "c", "d", "e"}},
		{"main.six", "defs", "six", []string{"a", "b", "c", "d", "e", "f"}},
	}},
}

// TestDefinitions builds programs for amd64 and for arm64 and reads their probe
// definitions from the files: the same probes on both, each flag at its variable's
// .symtab address, with the argument names each architecture passes in registers.
func TestDefinitions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs for two architectures")
	}
	for _, p := range defsPrograms {
		t.Run(filepath.Base(p.pkg), func(t *testing.T) {
			t.Parallel()
			found := map[string]map[string]offline.Definition{} // by GOARCH, then variable
			for goarch := range argRoom {
				bin := testbin.Build(t, "", goarch, p.pkg)
				defs, err := offline.Definitions(bin)
				if err != nil {
					t.Fatalf("%s: %v", goarch, err)
				}
				found[goarch] = checkDefs(t, goarch, bin, defs, p.want)
			}
			// The architectures agree on everything both can read.
			amd, arm := found["amd64"], found["arm64"]
			if len(amd) != len(arm) {
				t.Errorf("%d definitions on amd64, %d on arm64", len(amd), len(arm))
			}
			for sym, a := range amd {
				b := arm[sym]
				if a.Provider != b.Provider || a.Name != b.Name || !slices.Equal(a.Args, b.Args[:min(len(a.Args), len(b.Args))]) {
					t.Errorf("%s: amd64 %s:%s %q, arm64 %s:%s %q", sym, a.Provider, a.Name, a.Args, b.Provider, b.Name, b.Args)
				}
			}
		})
	}
}

// checkDefs compares defs, read from bin, with want, its arguments cut to what goarch
// passes in registers. It returns defs by the name of their variable.
func checkDefs(t *testing.T, goarch, bin string, defs []offline.Definition, want []wantDef) map[string]offline.Definition {
	t.Helper()
	varAt := map[uint64]string{}
	for _, s := range testbin.Symbols(t, bin) {
		if elf.ST_TYPE(s.Info) == elf.STT_OBJECT {
			varAt[s.Value] = s.Name
		}
	}
	bySym := map[string]offline.Definition{}
	for _, d := range defs {
		sym := varAt[d.Flag]
		if sym == "" {
			t.Errorf("%s: %s:%s: flag %#x is no variable's address", goarch, d.Provider, d.Name, d.Flag)
			continue
		}
		bySym[sym] = d
	}
	for _, w := range want {
		d, ok := bySym[w.sym]
		if !ok {
			t.Errorf("%s: no definition stored in %s", goarch, w.sym)
			continue
		}
		args := w.args[:min(len(w.args), argRoom[goarch])]
		if d.Provider != w.provider || d.Name != w.name || !slices.Equal(d.Args, args) {
			t.Errorf("%s: %s = %s:%s %q, want %s:%s %q", goarch, w.sym, d.Provider, d.Name, d.Args, w.provider, w.name, args)
		}
	}
	for sym, d := range bySym {
		if !slices.ContainsFunc(want, func(w wantDef) bool { return w.sym == sym }) {
			t.Errorf("%s: unexpected definition %s:%s %q in %s", goarch, d.Provider, d.Name, d.Args, sym)
		}
	}
	return bySym
}
