package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// The demo's workload is a program that uses gosdt: sdtdemo, run as "sdtdemo
// workload". sdtctl does not link gosdt's runtime itself, so that its own start runs
// no discovery and serves no socket; demo finds the workload, or builds it:
//
//  1. sdtdemo beside sdtctl's own executable (go install github.com/gosdt/gosdt/cmd/...
//     puts both in GOBIN), or on PATH;
//  2. built with the go command from the source sdtctl was built from: the module
//     directory its own files were compiled in (a clone: go run ./cmd/sdtctl demo), or
//     else the module version its build info names (go install ...@version), into the
//     user's cache directory, once per version.

// demoPackage is the workload's import path.
const demoPackage = "github.com/gosdt/gosdt/cmd/sdtdemo"

// demoWorkloadBinary returns the path of a workload program, building it if it must
// (saying so on w).
func demoWorkloadBinary(w io.Writer) (string, error) {
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), "sdtdemo"); isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("sdtdemo"); err == nil {
		return p, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fail(exitError, "demo: no sdtdemo beside sdtctl or on PATH, and no go command to build it (go install %s@latest)", demoPackage)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	if dir := sourceModule(); dir != "" {
		out := filepath.Join(cache, "gosdt", "sdtdemo-source-"+runtime.GOOS+"-"+runtime.GOARCH, "sdtdemo")
		fmt.Fprintf(w, "building the demo workload from %s ...\n", dir)
		// Into a file of its own, renamed over out once whole: two demos at once neither
		// run a half-written workload nor fail on a busy one.
		tmp := fmt.Sprintf("%s.%d", out, os.Getpid())
		cmd := exec.Command(gobin, "build", "-o", tmp, "./cmd/sdtdemo")
		cmd.Dir = dir
		cmd.Env = hostBuildEnv()
		if msg, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			return "", fail(exitError, "demo: building the workload in %s: %v\n%s", dir, err, msg)
		}
		if err := os.Rename(tmp, out); err != nil {
			os.Remove(tmp)
			return "", fail(exitError, "demo: %v", err)
		}
		return out, nil
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return "", fail(exitError, "demo: no sdtdemo beside sdtctl or on PATH, and no source or version to build it from (go install %s@latest)", demoPackage)
	}
	dir := filepath.Join(cache, "gosdt", "sdtdemo-"+bi.Main.Version+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	out := filepath.Join(dir, "sdtdemo")
	if isExecutable(out) {
		return out, nil
	}
	fmt.Fprintf(w, "installing the demo workload, %s@%s ...\n", demoPackage, bi.Main.Version)
	cmd := exec.Command(gobin, "install", demoPackage+"@"+bi.Main.Version)
	cmd.Env = append(hostBuildEnv(), "GOBIN="+dir)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fail(exitError, "demo: go install %s@%s: %v\n%s", demoPackage, bi.Main.Version, err, msg)
	}
	return out, nil
}

// hostBuildEnv is the environment for building the workload: sdtctl runs it
// itself, so it is built for the system sdtctl runs on, whatever GOOS and GOARCH the
// user's environment sets for cross-builds.
func hostBuildEnv() []string {
	return append(os.Environ(), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
}

// sourceModule is the directory of the gosdt module this program was compiled from,
// if it is still there: "" for a build with -trimpath, or from the module cache (read
// only: go install), or whose source is gone.
func sourceModule() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	dir := filepath.Dir(filepath.Dir(filepath.Dir(file))) // .../cmd/sdtctl/demobin.go
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module github.com/gosdt/gosdt\n") {
		return ""
	}
	if info, err := os.Stat(filepath.Join(dir, "cmd", "sdtdemo")); err != nil || !info.IsDir() {
		return ""
	}
	if strings.Contains(dir, string(filepath.Separator)+"pkg"+string(filepath.Separator)+"mod"+string(filepath.Separator)) {
		return "" // the module cache: go install knows the version
	}
	return dir
}

// isExecutable reports whether path is a regular file someone may execute.
func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}
