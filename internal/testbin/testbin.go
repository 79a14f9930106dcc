// Package testbin gives tests real Go binaries of an architecture, on any host: it
// builds them, and reads their text and their functions from the function table.
package testbin

import (
	"debug/elf"
	"debug/gosym"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testutil"
)

// Binary is the text and functions of a Go ELF binary.
type Binary struct {
	Path  string
	Text  arch.Bytes
	Funcs []gosym.Func // from .gopclntab, by entry
}

// Read reads the Go binary at path, which must be for machine.
func Read(t testing.TB, path string, machine uint16) *Binary {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.Machine(machine) {
		t.Fatalf("%s is %v, not %v", path, f.Machine, elf.Machine(machine))
	}
	text, pcln := f.Section(".text"), f.Section(".gopclntab")
	if text == nil || pcln == nil {
		t.Fatalf("%s: no .text or .gopclntab", path)
	}
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	pclnData, err := pcln.Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(pclnData, text.Addr))
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range tab.Funcs {
		if fn.Entry < text.Addr || fn.End > text.Addr+uint64(len(code)) {
			t.Fatalf("%s: %s at %#x..%#x outside .text", path, fn.Name, fn.Entry, fn.End)
		}
	}
	return &Binary{Path: path, Text: arch.Bytes{Base: text.Addr, Code: code}, Funcs: tab.Funcs}
}

// Binaries returns real Go binaries for linux on a's architecture: where this machine
// runs it, the go command, this test binary and the compiler; elsewhere (or when those
// are another architecture's, as under qemu) the gofmt command built for it. Under an
// emulator, where every instruction decoded costs tens of native ones, only gofmt:
// native runs read the large binaries with the same code.
func Binaries(t testing.TB, a *arch.Arch) []*Binary {
	t.Helper()
	if testutil.Emulated() {
		return []*Binary{Read(t, Build(t, "", a.Name, "cmd/gofmt"), a.Machine)}
	}
	paths := []string{gobin}
	if self, err := os.Executable(); err == nil {
		paths = append(paths, self)
	}
	if out, err := exec.Command(gobin, "env", "GOTOOLDIR").Output(); err == nil {
		paths = append(paths, filepath.Join(strings.TrimSpace(string(out)), "compile"))
	}
	var bins []*Binary
	for _, p := range paths {
		if f, err := elf.Open(p); err == nil {
			m := f.Machine
			f.Close()
			if m == elf.Machine(a.Machine) {
				bins = append(bins, Read(t, p, a.Machine))
			}
		}
	}
	if len(bins) == 0 {
		bins = append(bins, Read(t, Build(t, "", a.Name, "cmd/gofmt"), a.Machine))
	}
	return bins
}

// Symbols returns the ELF symbol table of the binary at path.
func Symbols(t testing.TB, path string) []elf.Symbol {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return syms
}
