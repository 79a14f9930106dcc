package sled_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/sled"
	"github.com/gosdt/gosdt/sled/offline"
)

// TestParallelDiscoveryIsSequential runs discovery of real binaries (this test binary,
// the go command, whose runtime holds many candidates that are not sites, and sdtctl's
// test target built for arm64) on one goroutine and on eight, each with a share of a
// few candidates, and requires the same table: the same sites with the same verdicts
// and sleds, the same rejections. Under -race it also checks the workers share nothing
// unguarded (arm64asm does not allow concurrent decoding: see arch/arm64).
func TestParallelDiscoveryIsSequential(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip("no file of this test binary to read:", err)
	}
	arm := testbin.Build(t, "", "arm64", "../cmd/sdtctl/testdata/target")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, bin := range []struct{ path, probes string }{
		{self, "github.com/gosdt/gosdt/sled/internal/fakesdt"},
		{runtime.GOROOT() + "/bin/go", "github.com/gosdt/gosdt/sdt"},
		{arm, "github.com/gosdt/gosdt/sdt"},
	} {
		restore := sled.SetProbePackage(bin.probes)
		runtime.GOMAXPROCS(1)
		seq, err := offline.Discover(bin.path)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GOMAXPROCS(8)
		defaults := sled.SetParallelism(4, 1<<10)
		par, err := offline.Discover(bin.path)
		defaults()
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if seq.Candidates == 0 || seq.Candidates != par.Candidates {
			t.Fatalf("%s: %d candidates on one goroutine, %d on eight", bin.path, seq.Candidates, par.Candidates)
		}
		if got, want := describe(par), describe(seq); got != want {
			t.Errorf("%s: eight goroutines found\n%s\none found\n%s", bin.path, got, want)
		}
		t.Logf("%s: %d candidates, %d sites, %d rejected, alike", bin.path, seq.Candidates, len(seq.Sites), len(seq.Rejected))
	}
}

func describe(t *sled.Table) string {
	var b strings.Builder
	for _, s := range t.Sites {
		fmt.Fprintf(&b, "site %#x %v len %d refusal %+v off % x on % x toggle %d return %#x\n", s.Addr, s.Kind, s.Len, s.Refusal, s.Off, s.On, s.Toggle, s.Return)
	}
	for _, r := range t.Rejected {
		fmt.Fprintf(&b, "rejected %#x flag %#x: %s\n", r.Addr, r.Flag, r.Reason)
	}
	return b.String()
}
