//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testbin"
)

// compiles matches a compile the go command ran (go build -x), through toolexec: the
// first -p flag, a word of its own (a build ID such as "…/x-p" followed by a space
// and -goversion is not one: a greedy match once read "-goversion" as the package).
var compiles = regexp.MustCompile(`(?m)toolexec -rules \S+ \S+/compile(\.exe)? .*? -p (\S+)`)

// TestToolexecCache: an instrumented build is cached by the go command, keyed on the
// rules (sdtctl adds their hash to the compiler's -V=full): a second build with the
// same rules compiles nothing, and one whose rules changed would compile the packages
// again, the instrumented one included (go build -n: not run, a cold build is minutes).
func TestToolexecCache(t *testing.T) {
	if testing.Short() {
		t.Skip("a cold instrumented build compiles the standard library again")
	}
	otelAppBin(t) // the first build, also the export tests'
	sdtctlBin := testbin.Sdtctl(t)
	src, _ := filepath.Abs("testdata/otelapp")
	// build runs go build -x (mode "-x"), or prints what it would run (-n: the go
	// command consults its cache as for a build, without compiling), and returns the
	// packages compiled.
	build := func(mode, rules string) []string {
		t.Helper()
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", mode, "-o", filepath.Join(t.TempDir(), "otelapp"),
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
	if pkgs := build("-x", rules); len(pkgs) != 0 {
		t.Fatalf("the same rules compiled %d packages again: %v", len(pkgs), pkgs)
	}
	b, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	// In the module's directory, as a rules file must be (its module requires gosdt);
	// a name the go command ignores. A change no earlier run made: the cache has never
	// seen these rules.
	changed := filepath.Join(src, ".fbt-changed-"+strconv.Itoa(os.Getpid())+".rules")
	if err := os.WriteFile(changed, fmt.Appendf(b, "# changed at %d\n", time.Now().UnixNano()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(changed) })
	pkgs := build("-n", changed)
	found := false
	for _, p := range pkgs {
		found = found || p == "example.com/otelapp/app"
	}
	if !found {
		t.Fatalf("changed rules did not compile example.com/otelapp/app again (%d packages compiled: %v)", len(pkgs), pkgs)
	}
	t.Logf("changed rules: %d packages to compile again", len(pkgs))
}
