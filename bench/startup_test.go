package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/seal"
	"github.com/gosdt/gosdt/internal/testbin"
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

// BenchmarkHelloStart runs hello world with one probe (sdt/testdata/hello/probe) and
// without (plain) from exec to exit, alternately, and reports the median time of each
// and the difference: what importing sdt costs a short command. An op is one run of
// each. With SDT_PATCH=off and SDT_CONTROL=off in the environment the programs run with
// them. Medians, because a shared machine's outliers are long; the instruction count,
// which load does not change, is sdt's TestStartCost.
func BenchmarkHelloStart(b *testing.B) {
	plain := testbin.Build(b, "", runtime.GOARCH, "../sdt/testdata/hello/plain")
	probe := testbin.Build(b, "", runtime.GOARCH, "../sdt/testdata/hello/probe")
	var tp, tq []time.Duration
	run := func(bin string) time.Duration {
		t0 := time.Now()
		if out, err := exec.Command(bin).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", bin, err, out)
		}
		return time.Since(t0)
	}
	for b.Loop() {
		tp = append(tp, run(plain))
		tq = append(tq, run(probe))
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	mp, mq := median(tp), median(tq)
	b.ReportMetric(mp, "plain-µs")
	b.ReportMetric(mq, "probe-µs")
	b.ReportMetric(mq-mp, "added-µs")
	b.ReportMetric(mq/mp, "ratio")
}
