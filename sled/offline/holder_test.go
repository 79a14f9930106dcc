package offline_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sled/offline"
)

// TestHolder builds sdtctl's test target for amd64 and arm64, as linked by default,
// without DWARF, without DWARF and symbols, and as a PIE, and requires every site's
// holder to be what the live path names: the function and line of the probe statement
// in main.go, not the inlined body of sdt's Probe2.
func TestHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program eight times")
	}
	src, err := os.ReadFile("../../cmd/sdtctl/testdata/target/main.go")
	if err != nil {
		t.Fatal(err)
	}
	line := 1 + strings.Count(string(src[:strings.Index(string(src), "sdt.Probe2(&tick")]), "\n")
	dir := t.TempDir()
	for _, goarch := range []string{"amd64", "arm64"} {
		for _, flags := range [][]string{nil, {"-ldflags=-w"}, {"-ldflags=-s -w"}, {"-buildmode=pie"}} {
			name := goarch + strings.Join(flags, "")
			t.Run(name, func(t *testing.T) {
				bin := filepath.Join(dir, strings.NewReplacer("/", "", " ", "", "=", "").Replace(name))
				cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(append([]string{"build", "-o", bin}, flags...), "../../cmd/sdtctl/testdata/target")...)
				cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("go build: %v\n%s", err, out)
				}
				tab, err := offline.Discover(bin)
				if err != nil {
					t.Fatal(err)
				}
				if len(tab.Sites) == 0 {
					t.Fatal("no sites")
				}
				for _, s := range tab.Sites {
					h := s.Describe()
					if h.Module != "main" || h.Func != "main.step" || filepath.Base(h.File) != "main.go" || h.Line != line {
						t.Errorf("site %#x held by %+v, want main.step at main.go:%d", s.Addr, h, line)
					}
				}
			})
		}
	}
}
