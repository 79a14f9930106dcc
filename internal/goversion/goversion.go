// Package goversion names the Go releases whose internal layouts gosdt has read and
// checked, and refuses, part by part, the layouts of any other Go.
package goversion

import (
	"fmt"
	"runtime"
	"strings"
)

// gosdt reads layouts the Go toolchain does not promise to keep. Each was read from
// the runtime's and the linker's source of a release and is checked by tests (named
// with each part below, and in GOVERSIONS.md) run on that release. On a Go not listed,
// a future release or a devel toolchain, every part that depends on a layout refuses
// with an *Error, and probes work through their branch check: a layout that moved
// would otherwise be misread in a live process.

// Part is one of the layouts gosdt reads.
type Part uint8

const (
	// FuncTab is the function table: runtime.moduledata's fields, the pclntab's
	// header and _func records, pc-value tables, inline trees and funcdata (discovery
	// of probe sites, run-time probes, offline reading of a binary).
	FuncTab Part = iota + 1
	// G is the runtime's g: the goroutine id's offset (events' goroutine ids).
	G
	// StackMaps are the stack maps (funcdata of argument and local pointer bitmaps)
	// that tell a run-time probe which argument words are live pointers.
	StackMaps
	// Shapes are the machine-code shapes the compiler emits and gosdt rewrites: a
	// function's prologue (its stack check) and epilogues for run-time probes.
	Shapes
	// DWARF is the debug information of functions' parameters and generic
	// dictionaries that names run-time probes' arguments.
	DWARF
)

var partNames = [...]string{FuncTab: "function table", G: "g structure", StackMaps: "stack maps",
	Shapes: "prologue and epilogue shapes", DWARF: "DWARF of parameters"}

func (p Part) String() string {
	if int(p) < len(partNames) && partNames[p] != "" {
		return partNames[p]
	}
	return fmt.Sprintf("part %d", uint8(p))
}

// Parts are all the parts, in order.
var Parts = []Part{FuncTab, G, StackMaps, Shapes, DWARF}

// Release is a Go release whose layouts were read, and what was checked for each part.
type Release struct {
	Go      string          // "go1.27": every go1.27.x
	Checked map[Part]string // what was read and how it is checked
}

// Releases are the Go releases gosdt reads, oldest first.
var Releases = []Release{
	{Go: "go1.26", Checked: map[Part]string{
		FuncTab:   "moduledata up to epclntab (funcdata and findfunctab inside .gopclntab, pcHeader.textStart 0); _func of 44 bytes; inlinedCall of 16; PCDATA/FUNCDATA indexes (internal/functab TestSelfAgreesWithRuntime, sled TestSearchRanges, TestDiscoverFile)",
		G:         "goid found by runtime.Stack in the first 384 bytes of a g (sdt/internal/goid)",
		StackMaps: "FUNCDATA_ArgsPointerMaps bitmaps of register-spilled arguments (sdt/internal/fprobe TestEntryArgs, TestEntryUnwind)",
		Shapes:    "stack-check prologue and POPQ BP/RET, LDP/RET epilogues, probe sites' flag checks (arch/amd64, arch/arm64, sdt/internal/fprobe)",
		DWARF:     "formal parameters, register assignment, generic dictionaries as *uintptr (internal/funcsig TestSignatures)",
	}},
	{Go: "go1.27", Checked: map[Part]string{
		FuncTab:   "moduledata gained typedesclen (after types) and itaboffset, itabsize (after etypes): rodata, gofunc and epclntab 3 words later; _func, inlinedCall, pcHeader and the PCDATA/FUNCDATA indexes unchanged (runtime/symtab.go, internal/abi/symtab.go diffed; the go1.26 tests pass); the runtime prints a generic method of a generic type as T[...].M[...]",
		G:         "g's fields up to goid unchanged (runtime/runtime2.go diffed); goid's tests pass",
		StackMaps: "FUNCDATA_ArgsPointerMaps unchanged (internal/abi diffed); fprobe's tests pass",
		Shapes:    "arch/amd64, arch/arm64 and fprobe's tests pass on go1.27's code, run-time probes on generic methods and closures (sdtctl TestGo127Names)",
		DWARF:     "a generic dictionary parameter is in the DWARF as *[N]uintptr (read as *uintptr); generic methods' dictionaries after the receiver (funcsig TestSignatures, TestDictIndex)",
	}},
}

// Of returns the release of a Go version as runtime.Version and a binary's build
// information write it ("go1.27.3", "go1.27rc1": "go1.27"); "" for a devel toolchain
// or anything else, whose layouts are not known. What follows a space (" X:..." of a
// GOEXPERIMENT build) does not change the release.
func Of(version string) string {
	if strings.HasPrefix(version, "devel") {
		return ""
	}
	version, _, _ = strings.Cut(version, " ")
	v, ok := strings.CutPrefix(version, "go1.")
	if !ok {
		return ""
	}
	n := 0
	for n < len(v) && v[n] >= '0' && v[n] <= '9' {
		n++
	}
	if n == 0 {
		return ""
	}
	if rest := v[n:]; rest != "" && rest[0] != '.' && !strings.HasPrefix(rest, "rc") && !strings.HasPrefix(rest, "beta") && !strings.HasPrefix(rest, "-") && !strings.HasPrefix(rest, "+") {
		return ""
	}
	return "go1." + v[:n]
}

// Known returns the release of version that gosdt reads, nil if it reads none.
func Known(version string) *Release {
	r := Of(version)
	for i := range Releases {
		if Releases[i].Go == r && r != "" {
			return &Releases[i]
		}
	}
	return nil
}

// Error is the refusal of a part's layout on a Go gosdt has not read.
type Error struct {
	Version string // the Go version, as the program or binary reports it
	Part    Part
}

func (e *Error) Error() string {
	v := e.Version
	if v == "" {
		v = "(unknown version)"
	}
	return fmt.Sprintf("Go %s is not a version whose layouts gosdt has read (%s): its %s refused; probes work through their branch check",
		v, List(), e.Part)
}

// List names the releases read: "go1.26, go1.27".
func List() string {
	names := make([]string, len(Releases))
	for i, r := range Releases {
		names[i] = r.Go
	}
	return strings.Join(names, ", ")
}

// Check returns nil if part's layout of Go version is one gosdt reads, else an *Error.
func Check(version string, part Part) error {
	if r := Known(version); r != nil && r.Checked[part] != "" {
		return nil
	}
	return &Error{Version: version, Part: part}
}

// fake, set only at link time (-ldflags=-X github.com/gosdt/gosdt/internal/goversion.fake=go1.28.0),
// stands for the running program's Go version: how tests see the refusals of a Go not
// read without building with one.
var fake string

// Running is the Go version the running program was built with.
func Running() string {
	if fake != "" {
		return fake
	}
	return runtime.Version()
}

// CheckRunning is Check of the running program's Go.
func CheckRunning(part Part) error { return Check(Running(), part) }

// Refusal is what is refused on Go version, all parts in one sentence; "" where gosdt
// reads its layouts.
func Refusal(version string) string {
	var parts []string
	for _, p := range Parts {
		if Check(version, p) != nil {
			parts = append(parts, p.String())
		}
	}
	if len(parts) == 0 {
		return ""
	}
	v := version
	if v == "" {
		v = "(unknown version)"
	}
	return fmt.Sprintf("Go %s is not a version whose layouts gosdt has read (%s): refused: %s; probes work through their branch check",
		v, List(), strings.Join(parts, ", "))
}
