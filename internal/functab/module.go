package functab

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"unsafe"

	"github.com/gosdt/gosdt/internal/goversion"
	"github.com/gosdt/gosdt/internal/rawptr"
)

// The running program's function table is the runtime's module data, which every Go
// program has, whatever its architecture or way of linking (PIE, static, external):
// runtime.lastmoduledatap is the main executable's moduledata (there are no others
// without plugins), and the linkname to it is one the runtime keeps for packages
// outside the standard library. moduledata's fields up to covctrs have had this layout
// since go1.16 (runtime/symtab.go); those after moved in go1.27 (moduleTail). Self
// reads it only on a Go whose layout was read (package goversion), and checks what it
// reads against the runtime's own answers and this package's own variables before
// trusting it (Delve's habit), and says what it could not trust.

//go:linkname lastmoduledatap runtime.lastmoduledatap
var lastmoduledatap unsafe.Pointer

// moduleData mirrors the start of runtime.moduledata with words of type W: uintptr
// in the running program, uint64 when read from a 64-bit binary's bytes (goFunc).
type moduleData[W uint32 | uint64 | uintptr] struct {
	pcHeader                                                   W
	funcnametab, cutab, filetab, pctab, pclntable, ftab        [3]W
	findfunctab, minpc, maxpc                                  W
	text, etext, noptrdata, enoptrdata, data, edata, bss, ebss W
	noptrbss, enoptrbss, covctrs, ecovctrs                     W
	// tail is from end on: end, gcdata, gcbss, types, etypes, rodata, gofunc, epclntab
	// in go1.26; go1.27 added typedesclen after types and itaboffset, itabsize after
	// etypes. moduleTail says where gofunc is (epclntab follows it).
	tail [11]W
}

// moduleTail returns the index in moduleData.tail of gofunc in the module data of
// Go release rel (goversion.Of), false for a release whose layout was not read.
func moduleTail(rel string) (gofunc int, ok bool) {
	switch rel {
	case "go1.26":
		return 6, true
	case "go1.27":
		return 9, true
	}
	return 0, false
}

// Module is the running program as its module data describes it.
type Module struct {
	Text, Etext uintptr // its text; zeros where the module data does not check out
	Data, Edata uintptr // pointer-bearing initialised data
	Bss, Ebss   uintptr // pointer-bearing zeroed data
	// Table is its function table; nil where it did not check out (then there is no
	// text to read either).
	Table *Table
	// NamesOK reports that the table's names are the runtime's.
	NamesOK bool
	// NoInline says why the inline trees cannot be read, "" when they can.
	NoInline string
	// Refused is set when the program's Go is not one whose layout this package
	// reads (a *goversion.Error): then only data and bss are given.
	Refused error
}

// inData and inBss are variables the linker puts in data (a pointer, initialised
// statically) and in bss (a pointer, zero): where Self looks for them.
var (
	boundsAnchor int
	inData       = &boundsAnchor
	inBss        *int
)

// Self returns the running program's module, as far as it checks out. It reads no
// page of the function table but those its checks need.
func Self() (m Module) {
	if lastmoduledatap == nil {
		return
	}
	md := (*moduleData[uintptr])(lastmoduledatap)
	d, b := uintptr(unsafe.Pointer(&inData)), uintptr(unsafe.Pointer(&inBss))
	if md.data > d || d >= md.edata || md.bss > b || b >= md.ebss {
		return // not the layout this package knows
	}
	// Data and bss, checked against this package's own variables whatever the Go, are
	// where probe definitions are found, for their branch checks: kept on a Go whose
	// function table is refused.
	m.Data, m.Edata, m.Bss, m.Ebss = md.data, md.edata, md.bss, md.ebss
	if m.Refused = goversion.CheckRunning(goversion.FuncTab); m.Refused != nil {
		return
	}
	gofuncAt, _ := moduleTail(goversion.Of(goversion.Running()))
	// The text must be the runtime's own, in which this function lies, and the table
	// must give the entries the runtime gives. On wasm a pc is no address of linear
	// memory: no text.
	pc := reflect.ValueOf(Self).Pointer()
	if runtime.GOARCH == "wasm" || md.ftab[1] < 2 || md.text > md.minpc || md.minpc > pc || pc >= md.maxpc || md.maxpc > md.etext {
		return
	}
	t := &Table{
		Text:    uint64(md.text),
		ptrSize: int(unsafe.Sizeof(uintptr(0))),
		nfunc:   int(md.ftab[1]) - 1,
		ftab:    unsafe.Slice((*byte)(at(md.ftab[0])), 8*md.ftab[1]),
		funcs:   unsafe.Slice((*byte)(at(md.pclntable[0])), md.pclntable[1]),
		names:   unsafe.Slice((*byte)(at(md.funcnametab[0])), md.funcnametab[1]),
		cutab:   unsafe.Slice((*byte)(at(md.cutab[0])), 4*md.cutab[1]),
		files:   unsafe.Slice((*byte)(at(md.filetab[0])), md.filetab[1]),
		pctab:   unsafe.Slice((*byte)(at(md.pctab[0])), md.pctab[1]),
	}
	for _, i := range []int{0, t.nfunc / 2, t.nfunc - 1} {
		entry := uintptr(t.Entry(i))
		if f := runtime.FuncForPC(entry); f == nil || f.Entry() != entry {
			return
		}
	}
	if uintptr(t.Entry(0)) != md.minpc || uintptr(t.End(t.nfunc-1)) != md.maxpc {
		return
	}
	m.Text, m.Etext, m.Table = md.text, md.etext, t
	m.NamesOK = true
	for _, i := range []int{0, t.nfunc / 2, t.nfunc - 1} {
		i = t.lastAt(i)
		f := runtime.FuncForPC(uintptr(t.Entry(i)))
		if f == nil || !PrintedAs(t.Name(i), f.Name()) {
			m.NamesOK = false
			break
		}
	}
	m.NoInline = inlineTables(md, md.tail[gofuncAt], md.tail[gofuncAt+1], t)
	if m.NoInline == "" {
		if err := t.checkInlineTrees(); err != nil {
			m.NoInline = err.Error()
		}
	}
	if m.NoInline != "" {
		t.gofunc = nil
	}
	return m
}

// inlineTables sets t's funcdata and quantum if the pclntab has the layout this
// package reads, and otherwise says why not.
func inlineTables(md *moduleData[uintptr], gofunc, epclntab uintptr, t *Table) string {
	if magic := *(*uint32)(at(md.pcHeader)); magic != Magic {
		return fmt.Sprintf("pclntab magic %#x, not %#x", magic, uint32(Magic))
	}
	// The funcdata lie in the pclntab, after its tables (go1.26); the pctab too.
	if gofunc < md.pcHeader || gofunc >= epclntab || md.pctab[0] < md.pcHeader || md.pctab[0]+md.pctab[1] > epclntab {
		return "funcdata or pc-value tables outside the pclntab"
	}
	q := uint32(*(*uint8)(at(md.pcHeader + headerMinLC)))
	if q == 0 {
		return "pclntab: no pc quantum"
	}
	t.Quantum = q
	t.gofunc = unsafe.Slice((*byte)(at(gofunc)), epclntab-gofunc)
	return ""
}

// lastAt returns the last function that starts where the i-th does: the one FuncForPC
// names at that entry. Functions share an entry only as aliases in C code linked in
// (the race detector's).
func (t *Table) lastAt(i int) int {
	for i+1 < t.nfunc && t.entryOff(i+1) == t.entryOff(i) {
		i++
	}
	return i
}

// checkInlineTrees checks that this package reads the inline trees as the runtime
// does: for the first pcs in inlined code of the first few functions that have some
// (the runtime's, in every program) the innermost inlined call it reads is the function
// the runtime's CallersFrames names there. It returns nil when some pcs were compared
// and all agreed.
func (t *Table) checkInlineTrees() error {
	const enough = 3
	compared := 0
	for i := 0; i < t.nfunc && compared < enough; i++ {
		tree, pcs, err := t.InlineTree(i)
		if err != nil {
			return err
		}
		if tree == nil {
			continue
		}
		// The first run in inlined code whose call is an ordinary function (the
		// runtime elides wrappers).
		var pc uint32
		var want []byte
		var bad error
		EachValue(pcs, t.Quantum, func(lo, hi uint32, v int32) bool {
			if v < 0 || lo == hi || int(v) >= tree.Len() || tree.Call(int(v)).FuncID != 0 {
				return true
			}
			if want = t.NameAt(tree.NameOff(int(v))); want == nil {
				bad = fmt.Errorf("function %d: inlined call %d: name out of the name table", i, v)
			}
			pc = lo
			return false
		})
		if bad != nil {
			return bad
		}
		if want == nil {
			continue
		}
		addr := uintptr(t.Entry(i)) + uintptr(pc)
		// CallersFrames wants return addresses (it looks up pc-1) and expands a pc's
		// inline tree only while more pcs follow: hence +1 and the trailing 0.
		f, _ := runtime.CallersFrames([]uintptr{addr + 1, 0}).Next()
		if !PrintedAs(want, f.Function) {
			return fmt.Errorf("inline tree of %s at %#x names %q, the runtime %q", t.Name(i), addr, want, f.Function)
		}
		compared++
	}
	if compared == 0 {
		return fmt.Errorf("no inlined call to compare with the runtime's")
	}
	return nil
}

// PrintedAs reports whether a function named name in the name table is the one the
// running program's runtime prints as printed (PrintName).
func PrintedAs(name []byte, printed string) bool {
	if bytes.IndexByte(name, '[') < 0 {
		return string(name) == printed
	}
	return PrintName(string(name), goversion.Running()) == printed
}

// PrintName is a function's name as the runtime of Go goVersion prints it
// (runtime.FuncForPC, tracebacks) from its name in the name table (go tool nm's):
// what lies between the first '[' and the last ']' as "..."; since go1.27, whose
// generic methods of generic types have two groups of type arguments, two such groups
// where the name has them at depth 0 (pkg.T[...].M[...], but also
// type:.eq.[...]sync/atomic.Pointer[...], which go1.26 printed type:.eq.[...]).
func PrintName(name, goVersion string) string {
	i := strings.IndexByte(name, '[')
	j := strings.LastIndexByte(name, ']')
	if i < 0 || j <= i {
		return name
	}
	interior := name[i+1 : j]
	if strings.IndexByte(interior, '[') < 0 || goversion.Of(goVersion) == "go1.26" {
		return name[:i] + "[...]" + name[j+1:]
	}
	// T[...].M[...]: the first group closes, and the second opens, at depth 0.
	depth, rbr := 1, -1
	for k := 0; k < len(interior); k++ {
		switch interior[k] {
		case '[':
			if depth++; depth == 1 {
				return name[:i] + "[...]" + interior[rbr+1:k] + "[...]" + name[j+1:]
			}
		case ']':
			if depth--; depth < 0 {
				return name
			}
			if depth == 0 {
				rbr = k
			}
		}
	}
	if depth == 1 && rbr == -1 {
		return name[:i] + "[...]" + name[j+1:]
	}
	return name
}

// at is the module data's memory (the function table, never the Go heap) at addr.
func at(addr uintptr) unsafe.Pointer { return rawptr.At(addr) }
