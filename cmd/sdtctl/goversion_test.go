//go:build linux

package main

import (
	"bytes"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
)

// fakeGo is the Go version the tests below pretend a program or a binary was built
// with: one whose layouts gosdt has not read.
const fakeGo = "go1.28.0"

// TestGoNotRead runs the e2e target linked as if by a Go gosdt has not read
// (goversion's link-time override): ps and list say so, naming the version and what is
// refused; its probe still traces, through its branch check; a run-time probe is
// refused with the same words.
func TestGoNotRead(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the control server runs on linux")
	}
	bin := testbin.Build(t, "", runtime.GOARCH, "./testdata/target",
		"-ldflags=-X github.com/gosdt/gosdt/internal/goversion.fake="+fakeGo)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	p := strconv.Itoa(startBin(t, bin, io.Discard)) // what it says at start is read through ps and list
	refusal := func(what, s string) {
		t.Helper()
		for _, w := range []string{"Go " + fakeGo, "go1.26, go1.27", "function table", "prologue and epilogue shapes", "DWARF", "branch check"} {
			if !strings.Contains(s, w) {
				t.Errorf("%s does not say %q:\n%s", what, w, s)
			}
		}
	}

	o, err := sdtctl(t, "ps")
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	refusal("ps", o)
	if o, err := sdtctl(t, "ps", "--json"); err != nil || !strings.Contains(o, `"go":"`+fakeGo+`"`) || !strings.Contains(o, `"layouts_refused":`) {
		t.Errorf("ps --json: %v\n%s", err, o)
	}
	o, err = sdtctl(t, "list", "-p", p, "e2e:::")
	// Without discovery no site names the probe's function.
	if err != nil || !strings.Contains(o, "e2e:main::tick") {
		t.Fatalf("list: %v\n%s", err, o)
	}
	refusal("list", o)
	if strings.Contains(o, "sealed-") {
		t.Errorf("list: a site sealed on a Go whose function table is not read:\n%s", o)
	}
	// The probe works through its branch check.
	o, err = sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "3", "-d", "30s")
	if err != nil || strings.Count(o, "e2e:main::tick") != 3 {
		t.Errorf("trace through the branch check: %v, want 3 events:\n%s", err, o)
	}
	// A run-time probe needs the function table and the prologue's shape: refused,
	// with the version named.
	var eb bytes.Buffer
	err = run([]string{"trace", "-p", p, "fbt:main:main.step:entry", "-c", "1", "-d", "2s"}, new(bytes.Buffer), &eb)
	if err == nil || !strings.Contains(err.Error()+eb.String(), fakeGo) {
		t.Errorf("run-time probe on %s: %v, want a refusal naming the version; stderr:\n%s", fakeGo, err, eb.String())
	}
	t.Logf("run-time probe: %v\n%s", err, eb.String())
}

// TestGoNotReadOffline reads a copy of a binary whose build information names a Go
// that gosdt has not read: list refuses it, naming the version and the function table.
func TestGoNotReadOffline(t *testing.T) {
	bin := buildTarget(t)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Section(".go.buildinfo")
	f.Close()
	if s == nil {
		t.Fatal("no .go.buildinfo")
	}
	// The header's 32 bytes, then the version, length first (one byte: it is short).
	at := int(s.Offset) + 32
	n := int(b[at])
	old := string(b[at+1 : at+1+n])
	if old != runtime.Version() || n < len("go1.28") {
		t.Fatalf("build information's version %q, want %q", old, runtime.Version())
	}
	fake := (fakeGo + strings.Repeat("0", n))[:n] // as long as the real one: nothing moves
	copy(b[at+1:], fake)
	copyBin := filepath.Join(t.TempDir(), "target-"+fake)
	if err := os.WriteFile(copyBin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list", copyBin}, {"list", copyBin, "--json"}} {
		o, err := sdtctl(t, args...)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if err == nil || !strings.Contains(msg, "Go "+fake) || !strings.Contains(msg, "function table") {
			t.Errorf("%s: %v, want a refusal naming Go %s and its function table\n%s", strings.Join(args, " "), err, fake, o)
		}
	}
	// The unpatched binary still reads.
	if o, err := sdtctl(t, "list", bin); err != nil || !strings.Contains(o, "e2e:main:main.step:tick") {
		t.Errorf("list of the original: %v\n%s", err, o)
	}
}
