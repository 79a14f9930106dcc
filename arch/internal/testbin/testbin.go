// Package testbin gives the arch packages' tests real Go binaries of an architecture,
// on any host: their text and their functions, from the function table.
package testbin

import (
	"debug/elf"
	"debug/gosym"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gosdt/gosdt/arch"
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

// Binaries returns real Go binaries for linux/goarch: where this machine runs that
// architecture, this test binary, the go command and the compiler; elsewhere (or when
// those are another architecture's, as under qemu) the gofmt command built for it.
func Binaries(t testing.TB, a *arch.Arch) []*Binary {
	t.Helper()
	root := runtime.GOROOT()
	gobin := filepath.Join(root, "bin", "go")
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
		bins = append(bins, Read(t, Gofmt(t, a.Name), a.Machine))
	}
	return bins
}

var built struct {
	sync.Mutex
	dir   string
	paths map[string]string
}

// Gofmt returns the gofmt command built for linux/goarch, once per test process (and
// from the build cache after the first). It skips the test when there is no go command.
func Gofmt(t testing.TB, goarch string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if p, ok := built.paths[goarch]; ok {
		return p
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		t.Skip("no go command to build a real binary with:", err)
	}
	if built.dir == "" {
		d, err := os.MkdirTemp("", "gosdt-testbin")
		if err != nil {
			t.Fatal(err)
		}
		built.dir, built.paths = d, map[string]string{}
	}
	out := filepath.Join(built.dir, "gofmt-"+goarch)
	cmd := exec.Command(gobin, "build", "-o", out, "cmd/gofmt")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building gofmt for %s: %v\n%s", goarch, err, msg)
	}
	built.paths[goarch] = out
	return out
}

// Cleanup removes what Gofmt built; call it from TestMain after m.Run.
func Cleanup() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
