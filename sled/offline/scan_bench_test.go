package offline

import (
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/sled"
)

// BenchmarkScan finds and proves every site of bench's test binary (1,079 sites in
// 1,250 generated functions, and the suite's own), built for each architecture, with
// that architecture's description, on this machine: the cost of a site's proof per
// architecture without an emulator in between. It searches all the text, as reading a
// file does (a running program searches only the functions that inlined sdt).
func BenchmarkScan(b *testing.B) {
	for _, goarch := range []string{"amd64", "arm64"} {
		path := testbin.BuildTest(b, goarch, "../../bench")
		b.Run(goarch, func(b *testing.B) {
			bin, err := open(path, "sites")
			if err != nil {
				b.Fatal(err)
			}
			defer bin.f.Close()
			src, err := bin.source()
			if err != nil {
				b.Fatal(err)
			}
			var t *sled.Table
			for b.Loop() {
				t = sled.Scan(bin.arch.Arch, src)
			}
			if len(t.Sites) == 0 {
				b.Fatal("no site found")
			}
			perSite := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(len(t.Sites))
			b.ReportMetric(perSite/1e3, "us/site")
			b.ReportMetric(float64(len(t.Sites)), "sites")
			b.ReportMetric(float64(t.Candidates), "candidates")
		})
	}
}
