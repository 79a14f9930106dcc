//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
)

// compiles matches a compile the go command ran (go build -x), through toolexec.
var compiles = regexp.MustCompile(`(?m)toolexec -rules \S+ \S+/compile(\.exe)? .*-p (\S+)`)

// TestToolexecCache: an instrumented build is cached by the go command, keyed on the
// rules (sdtctl adds their hash to the compiler's -V=full): a second build with the
// same rules compiles nothing, and one whose rules changed compiles the packages
// again, the instrumented one included.
func TestToolexecCache(t *testing.T) {
	if testing.Short() {
		t.Skip("a cold instrumented build compiles the standard library again")
	}
	otelAppBin(t) // the first build, also the export tests'
	sdtctlBin := testbin.Sdtctl(t)
	src, _ := filepath.Abs("testdata/otelapp")
	build := func(rules string) []string {
		t.Helper()
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-x", "-o", filepath.Join(t.TempDir(), "otelapp"),
			"-toolexec", sdtctlBin+" toolexec -rules "+rules, "./cmd/otelapp")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0", "GOOS=", "GOARCH=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		var pkgs []string
		for _, m := range compiles.FindAllStringSubmatch(string(out), -1) {
			pkgs = append(pkgs, m[2])
		}
		return pkgs
	}
	rules := filepath.Join(src, "fbt.rules")
	if pkgs := build(rules); len(pkgs) != 0 {
		t.Fatalf("the same rules compiled %d packages again: %v", len(pkgs), pkgs)
	}
	b, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	// In the module's directory, as a rules file must be (its module requires gosdt);
	// a name the go command ignores.
	changed := filepath.Join(src, ".fbt-changed-"+strconv.Itoa(os.Getpid())+".rules")
	if err := os.WriteFile(changed, append(b, "# changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(changed) })
	pkgs := build(changed)
	found := false
	for _, p := range pkgs {
		found = found || p == "example.com/otelapp/app"
	}
	if !found {
		t.Fatalf("changed rules did not compile example.com/otelapp/app again (%d packages compiled: %v)", len(pkgs), pkgs)
	}
	t.Logf("changed rules: %d packages compiled again", len(pkgs))
	if pkgs := build(changed); len(pkgs) != 0 {
		t.Fatalf("the changed rules, again, compiled %d packages: %v", len(pkgs), pkgs)
	}
}
