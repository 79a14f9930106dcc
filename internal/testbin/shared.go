package testbin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Binaries a whole test binary shares (sdtctl, a target program several tests run)
// are built once, into one directory that Main removes when the tests end: a test's
// own TempDir would go with the first test that built them.

var shared struct {
	mu     sync.Mutex
	dir    string
	builds map[string]*onceBuild
}

type onceBuild struct {
	once sync.Once
	bin  string
	err  error
}

// sharedDir is that directory, made on first use, readable by other users (tests run
// sdtctl as another uid).
func sharedDir() (string, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dir == "" {
		d, err := os.MkdirTemp("", "testbin-")
		if err != nil {
			return "", err
		}
		if err := os.Chmod(d, 0o755); err != nil {
			os.RemoveAll(d)
			return "", err
		}
		shared.dir = d
	}
	return shared.dir, nil
}

// Main runs the tests and removes the binaries they shared; a package whose tests
// build shared binaries calls it from TestMain: os.Exit(testbin.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	shared.mu.Lock()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.mu.Unlock()
	return code
}

// Once builds the binary named name by build (given its output path) once per key
// for the whole test binary, and returns its path.
func Once(t testing.TB, key, name string, build func(out string) error) string {
	t.Helper()
	shared.mu.Lock()
	if shared.builds == nil {
		shared.builds = map[string]*onceBuild{}
	}
	b := shared.builds[key]
	if b == nil {
		b = &onceBuild{}
		shared.builds[key] = b
	}
	shared.mu.Unlock()
	b.once.Do(func() {
		dir, err := sharedDir()
		if err != nil {
			b.err = err
			return
		}
		d, err := os.MkdirTemp(dir, "")
		if err == nil {
			err = os.Chmod(d, 0o755)
		}
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(d, name)
		b.err = build(b.bin)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// Shared is Build, once for the whole test binary: the binary, named as pkg's
// directory (a process name tests look for), is kept for every test that asks for
// the same pkg, dir, goarch and flags, until Main removes it.
func Shared(t testing.TB, dir, goarch, pkg string, flags ...string) string {
	t.Helper()
	haveGo(t)
	key := fmt.Sprintf("build\x00%s\x00%s\x00%s\x00%s", dir, goarch, pkg, strings.Join(flags, "\x00"))
	return Once(t, key, filepath.Base(pkg), func(out string) error {
		return build(dir, goarch, pkg, out, flags)
	})
}
