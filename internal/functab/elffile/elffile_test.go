package elffile_test

import (
	"debug/elf"
	"debug/gosym"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/functab/elffile"
	"github.com/gosdt/gosdt/internal/testbin"
)

// TestReadELF reads binaries of both architectures and compares every function with
// debug/gosym, the standard library's reader (the oracle).
func TestReadELF(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			path := testbin.Build(t, "", goarch, "github.com/gosdt/gosdt/internal/functab/elffile/testdata/prog")
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tab, err := elffile.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			pcln, _ := f.Section(".gopclntab").Data()
			oracle, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, tab.Text))
			if err != nil {
				t.Fatal(err)
			}
			if tab.Len() != len(oracle.Funcs) {
				t.Fatalf("%d functions, gosym %d", tab.Len(), len(oracle.Funcs))
			}
			for i, fn := range oracle.Funcs {
				name := string(tab.Name(i))
				if name == "" && i == 0 {
					name = fn.Name // name offset 0: no name for the runtime, the table's first for gosym
				}
				if tab.Entry(i) != fn.Entry || tab.End(i) != fn.End || name != fn.Name {
					t.Fatalf("function %d: %#x-%#x %s, gosym %#x-%#x %s", i, tab.Entry(i), tab.End(i), tab.Name(i), fn.Entry, fn.End, fn.Name)
				}
				if strings.HasPrefix(fn.Name, "go:") {
					continue // the linker's markers: no line table (gosym reads one at offset 0)
				}
				for pc := fn.Entry; pc < fn.End; pc += max((fn.End-fn.Entry)/7, 1) {
					file, line := tab.FileLine(i, pc)
					wantFile, wantLine, of := oracle.PCToLine(pc)
					if of == nil || of.Entry != fn.Entry || of.Name != fn.Name {
						continue // a pc that gosym gives a function of the same entry
					}
					if wantLine < 0 {
						wantFile, wantLine = "", 0 // none
					}
					if file != wantFile || line != wantLine {
						t.Fatalf("%s+%#x: %s:%d, gosym %s:%d", fn.Name, pc-fn.Entry, file, line, wantFile, wantLine)
					}
				}
			}
			// main.caller inlines main.double: its frames name both.
			var found bool
			for i := range tab.Len() {
				if string(tab.Name(i)) != "main.caller" {
					continue
				}
				tree, _, err := tab.InlineTree(i)
				if err != nil || tree == nil {
					t.Fatalf("main.caller: no inline tree (%v)", err)
				}
				for pc := tab.Entry(i); pc < tab.End(i); pc++ {
					fr := tab.Frames(pc)
					if len(fr) == 2 && fr[0].Func == "main.double" && fr[1].Func == "main.caller" && strings.HasSuffix(fr[0].File, "prog/main.go") {
						found = true
						break
					}
				}
			}
			if !found {
				t.Error("no pc of main.caller has frames main.double, main.caller")
			}
		})
	}
}
