package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/seal"
)

// BenchmarkStartup runs a generated program (2,000 functions, 125 probe sites; with
// -discovery also 20,000 and 1,250) from exec to exit, as linked and as sealed by
// sdtctl seal: the sealed one reads its site table instead of scanning its text.
// Compare with benchstat -col /binary. discovery-µs is the program's own report of
// its start-up discovery (the scan, or reading and checking the table).
func BenchmarkStartup(b *testing.B) {
	sizes := []int{2000}
	if *discoveryFlag {
		sizes = append(sizes, 20000)
	}
	for _, n := range sizes {
		plain, sealed := startupPrograms(b, n)
		for _, bin := range []struct{ name, path string }{{"plain", plain}, {"sealed", sealed}} {
			b.Run(fmt.Sprintf("funcs=%d/binary=%s", n, bin.name), func(b *testing.B) {
				var discovery time.Duration
				for b.Loop() {
					out, err := exec.Command(bin.path).Output()
					if err != nil {
						b.Fatalf("%s: %v", bin.path, err)
					}
					var text, cands, sites int
					var ns int64
					if _, err := fmt.Sscanf(string(out), "text=%d candidates=%d sites=%d elapsed=%d", &text, &cands, &sites, &ns); err != nil {
						b.Fatalf("output %q: %v", out, err)
					}
					discovery += time.Duration(ns)
				}
				b.ReportMetric(float64(discovery.Microseconds())/float64(b.N), "discovery-µs")
			})
		}
	}
}

var startupBuilt = map[int][2]string{}

// startupPrograms builds the generated program of n functions once per test binary,
// and a sealed copy.
func startupPrograms(b *testing.B, n int) (plain, sealed string) {
	if p, ok := startupBuilt[n]; ok {
		return p[0], p[1]
	}
	root, err := filepath.Abs("..")
	must(b, err)
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	must(b, err)
	goSum, _ := os.ReadFile(filepath.Join(root, "go.sum"))
	dir, err := os.MkdirTemp("", "gosdt-startup")
	must(b, err)
	b.Cleanup(func() { os.RemoveAll(dir) })
	writeProgram(b, dir, n, root, goMod, goSum)
	plain = filepath.Join(dir, "plain")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", plain, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build (%d funcs): %v\n%s", n, err, out)
	}
	sealed = filepath.Join(dir, "sealed")
	r, err := seal.File(plain, sealed)
	must(b, err)
	b.Logf("%d funcs: sealed %d of %d sites, %d notes", n, r.Sealed, r.Sites, r.Notes)
	startupBuilt[n] = [2]string{plain, sealed}
	return plain, sealed
}
