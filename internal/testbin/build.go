package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Build builds pkg (an import path, or a directory relative to dir) for linux/goarch
// with flags, in dir ("" for the test's own), into a temporary directory of t, and
// returns the binary's path. It skips the test when there is no go command, or when
// -race is asked for another architecture than the go command's (it needs cgo, which
// a cross-build lacks).
func Build(t testing.TB, dir, goarch, pkg string, flags ...string) string {
	t.Helper()
	cross := goarch != runtime.GOARCH || runtime.GOOS != "linux"
	if cross && slices.Contains(flags, "-race") {
		t.Skipf("-race build for linux/%s needs a linux/%s host", goarch, goarch)
	}
	haveGo(t)
	out := filepath.Join(t.TempDir(), filepath.Base(pkg)+"-"+goarch)
	if err := build(dir, goarch, pkg, out, flags); err != nil {
		if slices.Contains(flags, "-race") && strings.Contains(err.Error(), "requires cgo") {
			// The go command builds for another architecture than its own (this test
			// runs under qemu): no C compiler for it, so no -race.
			t.Skipf("%v", err)
		}
		t.Fatal(err)
	}
	return out
}

// build is Build's go build of pkg into out.
func build(dir, goarch, pkg, out string, flags []string) error {
	cross := goarch != runtime.GOARCH || runtime.GOOS != "linux"
	cmd := goCommand(goarch, !cross, append(append([]string{"build", "-o", out}, flags...), pkg)...)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("GOARCH=%s go build %s %s: %v\n%s", goarch, strings.Join(flags, " "), pkg, err, msg)
	}
	return nil
}

// BuildTest builds the test binary of the package in dir (relative to the test's own)
// for linux/goarch, without cgo, and returns its path: a program with the sites of a
// whole test suite.
func BuildTest(t testing.TB, goarch, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(dir)+"-"+goarch+".test")
	haveGo(t)
	if msg, err := goCommand(goarch, false, "test", "-c", "-o", out, dir).CombinedOutput(); err != nil {
		t.Fatalf("GOARCH=%s go test -c %s: %v\n%s", goarch, dir, err, msg)
	}
	return out
}

// BuildWithRules builds pkg of the module in dir for linux/goarch, without cgo,
// instrumented by the rules file (an absolute path) through `sdtctl toolexec -rules`,
// and returns the binary's path. The module's requirements may be resolved anew
// (-mod=mod): its go.sum need not list what the rewrite adds.
func BuildWithRules(t testing.TB, goarch, dir, pkg, rules string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg)+"-"+goarch)
	haveGo(t)
	cmd := goCommand(goarch, false, "build", "-o", out, "-toolexec", Sdtctl(t)+" toolexec -rules "+rules, pkg)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "GOFLAGS=-mod=mod")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOARCH=%s go build %s with the rules %s: %v\n%s", goarch, pkg, rules, err, msg)
	}
	return out
}

// Sdtctl returns sdtctl built for the go command's own machine (it runs sdtctl as
// -toolexec; under qemu the tests run it without the emulator), once for the whole
// test binary (Shared).
func Sdtctl(t testing.TB) string {
	t.Helper()
	haveGo(t)
	return Once(t, "sdtctl", "sdtctl", func(out string) error {
		cmd := exec.Command(gobin, "build", "-o", out, "github.com/gosdt/gosdt/cmd/sdtctl")
		cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=", "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build sdtctl: %v\n%s", err, msg)
		}
		return nil
	})
}

// gobin is the go command of the toolchain that built this test binary.
var gobin = filepath.Join(runtime.GOROOT(), "bin", "go")

// haveGo skips the test when there is no go command.
func haveGo(t testing.TB) {
	t.Helper()
	if runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no processes to run the go command in on", runtime.GOOS)
	}
	if _, err := os.Stat(gobin); err != nil {
		t.Skip("no go command to build a program with:", err)
	}
}

// goCommand is the go command with args for linux/goarch, with cgo or without, and
// with none of the environment's flags, workspace or other toolchain.
func goCommand(goarch string, cgo bool, args ...string) *exec.Cmd {
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	if !cgo {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	return cmd
}
