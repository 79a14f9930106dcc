package elffile_test

import (
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/functab/elffile"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// TestReadELF reads every function of real binaries of both architectures (a small
// program, the runtime and the standard library with it, much inlined) and compares
// what it reads with the standard library's readers, used here as oracles only:
// debug/gosym for each function's extent and name and for the file and line at every
// pc; the DWARF's inlined subroutines for the inline tree at every pc (the functions
// inlined there, innermost first, and the file and line of each call). sled/offline
// and sdtctl seal read files with this table.
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
			if tab.Gofunc() == nil {
				t.Fatal("go:func.* not found: no inline trees read")
			}
			pcln, _ := f.Section(".gopclntab").Data()
			oracle, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, tab.Text))
			if err != nil {
				t.Fatal(err)
			}
			if tab.Len() != len(oracle.Funcs) {
				t.Fatalf("%d functions, gosym %d", tab.Len(), len(oracle.Funcs))
			}
			inl := readInlined(t, f)
			// Under an emulator every pc costs tens of times more: a pc in 16 there.
			step := uint64(tab.Quantum)
			if testutil.Emulated() {
				step *= 16
			}
			var pcs, inlinedPCs, fails int
			fail := func(format string, args ...any) {
				if fails++; fails <= 10 {
					t.Errorf(format, args...)
				}
			}
			for i, fn := range oracle.Funcs {
				if tab.Entry(i) != fn.Entry || tab.End(i) != fn.End || string(tab.Name(i)) != fn.Name {
					t.Fatalf("function %d: %#x-%#x %s, gosym %#x-%#x %s", i, tab.Entry(i), tab.End(i), tab.Name(i), fn.Entry, fn.End, fn.Name)
				}
				if strings.HasPrefix(fn.Name, "go:") {
					continue // the linker's markers: no line table (gosym reads one at offset 0)
				}
				calls := inl[fn.Entry]
				for pc := fn.Entry; pc < fn.End; pc += step {
					if of := oracle.PCToFunc(pc); of == nil || of.Entry != fn.Entry || of.Name != fn.Name {
						continue // a pc that gosym gives another function of the same entry
					}
					pcs++
					if tab.Find(pc) != i {
						fail("%s+%#x: in function %d, not %d", fn.Name, pc-fn.Entry, tab.Find(pc), i)
					}
					frames := tab.Frames(pc)
					if len(frames) == 0 || frames[len(frames)-1].Func != fn.Name {
						fail("%s+%#x: frames %+v, not ending in the function", fn.Name, pc-fn.Entry, frames)
						continue
					}
					// Lines: the innermost frame is the pc's own position.
					file, line, _ := oracle.PCToLine(pc)
					if line < 0 {
						file, line = "", 0 // none
					}
					if got := frames[0]; got.File != file || got.Line != line {
						fail("%s+%#x: %s:%d, gosym %s:%d", fn.Name, pc-fn.Entry, got.File, got.Line, file, line)
					}
					if f, l := tab.FileLine(i, pc); f != file || l != line {
						fail("%s+%#x: FileLine %s:%d, gosym %s:%d", fn.Name, pc-fn.Entry, f, l, file, line)
					}
					// Inline trees: the DWARF's chain of inlined calls at pc.
					want := calls.at(pc)
					if len(want) > 0 {
						inlinedPCs++
					}
					if !sameCalls(frames[:len(frames)-1], frames, want) {
						fail("%s+%#x: inlined %s, DWARF %s", fn.Name, pc-fn.Entry, describeFrames(frames), describeCalls(want))
					}
				}
			}
			t.Logf("%d functions, %d pcs compared, %d of them in inlined code", tab.Len(), pcs, inlinedPCs)
			if inlinedPCs == 0 {
				t.Error("no pc in inlined code: the inline trees were not compared")
			}
			// main.caller inlines main.double: its frames name both.
			var found bool
			for i := range tab.Len() {
				if string(tab.Name(i)) != "main.caller" {
					continue
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

// inlinedCall is one DW_TAG_inlined_subroutine: the pcs of an inlined call's code,
// the function inlined, and where the call is; depth counts the inlined calls around it.
type inlinedCall struct {
	ranges [][2]uint64
	origin dwarf.Offset // the abstract function's entry, which names it
	fn     string
	file   string
	line   int
	depth  int
}

type inlinedCalls []inlinedCall

// at returns the inlined calls whose code pc is, innermost first.
func (cs inlinedCalls) at(pc uint64) []inlinedCall {
	var chain []inlinedCall
	for _, c := range cs { // parents come before their children
		for _, r := range c.ranges {
			if pc >= r[0] && pc < r[1] && c.depth == len(chain) {
				chain = append(chain, c)
				break
			}
		}
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain
}

// sameCalls reports whether the inlined frames got (all frames but the function's)
// are the DWARF's calls: the same functions, each called from the next frame's file
// and line.
func sameCalls(got, frames []functab.Frame, want []inlinedCall) bool {
	if len(got) != len(want) {
		return false
	}
	for k, c := range want {
		if got[k].Func != c.fn || frames[k+1].File != c.file || frames[k+1].Line != c.line {
			return false
		}
	}
	return true
}

func describeFrames(frames []functab.Frame) string {
	var b strings.Builder
	for _, f := range frames {
		fmt.Fprintf(&b, "[%s at %s:%d]", f.Func, f.File, f.Line)
	}
	return b.String()
}

func describeCalls(calls []inlinedCall) string {
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "[%s called at %s:%d]", c.fn, c.file, c.line)
	}
	return b.String()
}

// readInlined reads the DWARF's inlined calls of every function, by the function's
// entry.
func readInlined(t *testing.T, f *elf.File) map[uint64]inlinedCalls {
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	names := map[dwarf.Offset]string{} // abstract functions
	byEntry := map[uint64]inlinedCalls{}
	r := d.Reader()
	var cu *dwarf.Entry
	var files []*dwarf.LineFile
	var entry uint64 // of the function being read
	var stack []int  // the depth of inlined calls at each open level of entries
	inFunc := -1     // the level of the function being read, -1 outside one
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Tag == 0 { // the end of a level's children
			stack = stack[:len(stack)-1]
			if len(stack) == inFunc {
				inFunc = -1
			}
			continue
		}
		depth := 0
		if len(stack) > 0 {
			depth = stack[len(stack)-1]
		}
		switch e.Tag {
		case dwarf.TagCompileUnit:
			cu = e
			lr, err := d.LineReader(cu)
			if err != nil {
				t.Fatalf("line table of %v: %v", cu.Val(dwarf.AttrName), err)
			}
			files = nil
			if lr != nil { // nil: a unit without code
				files = lr.Files()
			}
		case dwarf.TagSubprogram:
			if name, ok := e.Val(dwarf.AttrName).(string); ok {
				names[e.Offset] = name
			}
			if low, ok := e.Val(dwarf.AttrLowpc).(uint64); ok {
				entry, inFunc = low, len(stack)
			}
		case dwarf.TagInlinedSubroutine:
			if inFunc < 0 {
				break
			}
			ranges, err := d.Ranges(e)
			if err != nil {
				t.Fatal(err)
			}
			origin, _ := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			fileIndex, _ := e.Val(dwarf.AttrCallFile).(int64)
			line, _ := e.Val(dwarf.AttrCallLine).(int64)
			c := inlinedCall{ranges: ranges, origin: origin, line: int(line), depth: depth}
			if fileIndex >= 0 && int(fileIndex) < len(files) && files[fileIndex] != nil {
				c.file = files[fileIndex].Name
			}
			byEntry[entry] = append(byEntry[entry], c)
			depth++
		}
		if e.Children {
			stack = append(stack, depth)
		}
	}
	for _, cs := range byEntry {
		for i := range cs {
			// The function inlined may be another compilation unit's, later.
			if cs[i].fn = names[cs[i].origin]; cs[i].fn == "" {
				t.Fatalf("an inlined call's abstract origin %#x has no name", cs[i].origin)
			}
		}
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].depth < cs[j].depth })
	}
	return byEntry
}
