// Package otelcoltest runs a real OpenTelemetry Collector for tests: OTLP in over gRPC
// and HTTP on 127.0.0.1, what it received written as OTLP JSON (the contrib file
// exporter), read back as Spans and Metrics.
//
// The collector is the module in ./otelcol, with a go.mod of its own so that its
// dependencies stay out of gosdt's. It is built once per content of that module (its
// go.mod, go.sum and main.go), into the user's cache directory, and reused by every
// test binary and every run after: the first build takes minutes, later ones nothing.
// Tests that need it skip, through internal/testutil, with the capability "otelcol",
// when it cannot be built (no go command, no module proxy) or run (not linux).
package otelcoltest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gosdt/gosdt/internal/testutil"
)

// Capability is the name SDT_REQUIRE gives the collector.
const Capability = "otelcol"

// Need returns the collector binary, or skips the test.
func Need(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the collector tests trace linux processes")
	}
	bin, err := Binary()
	if err != nil {
		testutil.Skip(t, Capability, err.Error())
	}
	return bin
}

// Binary builds the collector, or finds it built, and returns its path.
func Binary() (string, error) { return binary() }

var binary = sync.OnceValues(func() (string, error) {
	src, err := moduleDir()
	if err != nil {
		return "", err
	}
	key, err := contentKey(src)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "gosdt-otelcol", key)
	bin := filepath.Join(dir, "otelcol")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Test binaries of several packages may want it at once: one builds, the others
	// wait for it.
	unlock, err := lock(filepath.Join(dir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		return "", fmt.Errorf("no go command to build the collector with: %v", err)
	}
	tmp := bin + ".tmp"
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", tmp, ".")
	cmd.Dir = src
	// The go command's own platform (a test under qemu runs the collector natively),
	// the module's own go.sum, no workspace.
	cmd.Env = append(os.Environ(), "GOOS=", "GOARCH=", "GOFLAGS=-mod=readonly", "GOWORK=off", "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("building the collector in %s: %v\n%s", src, err, out)
	}
	return bin, os.Rename(tmp, bin)
})

// moduleDir is the collector's module: ./otelcol beside this file.
func moduleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot tell where the collector's module is (built with -trimpath?)")
	}
	return filepath.Join(filepath.Dir(file), "otelcol"), nil
}

// contentKey names a build of the module: its files' contents and the toolchain.
func contentKey(dir string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, strings.TrimSpace(hostArch()))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func hostArch() string { return testutil.HostArch() }
