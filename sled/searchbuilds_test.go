package sled_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sled"
	"github.com/gosdt/gosdt/sled/offline"
)

// searchBuilds are the programs TestSearchBuilds builds for each architecture:
// testdata/sites (sites in plain, guarded, generic, closure, deferred, latency and
// cross-package inlined code) with the flags that change where sites land, sdt's
// selfcheck, the test binaries of sdt and bench (hundreds of sites of every shape),
// and fbt's example instrumented by rules. outside: the program has sites outside
// package sdt (every build that inlines).
var searchBuilds = []struct {
	name    string
	build   func(t *testing.T, goarch string) string
	outside bool
}{
	{"sites", program("./testdata/sites"), true},
	{"sites-nomaininline", program("./testdata/sites", "-gcflags=-l"), true},
	{"sites-noinline", program("./testdata/sites", "-gcflags=all=-l"), false},
	{"sites-race", program("./testdata/sites", "-race"), true},
	{"sites-pie", program("./testdata/sites", "-buildmode=pie"), true},
	{"selfcheck", program("../sdt/testdata/selfcheck"), true},
	{"selfcheck-race", program("../sdt/testdata/selfcheck", "-race"), true},
	{"sdt.test", testProgram("../sdt"), true},
	{"bench.test", testProgram("../bench"), true},
	{"fbt-example", fbtExample, true},
}

// TestSearchBuilds: in real programs of both architectures (searchBuilds), every site
// that a search of all the text finds (package offline, which reads everything) lies
// in the functions that start-up discovery chooses from the inline trees (FileSearch:
// the same code, on the file's tables).
func TestSearchBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	if testutil.Emulated() {
		// The programs are built by the go command for both architectures and read as
		// files: the native run checks the same binaries, in a fraction of the time.
		t.Skip("under an emulator: the native run checks both architectures' builds")
	}
	defer sled.SetProbePackage("github.com/gosdt/gosdt/sdt")() // TestMain's is the fake one
	for _, goarch := range []string{"amd64", "arm64"} {
		for _, b := range searchBuilds {
			t.Run(goarch+"/"+b.name, func(t *testing.T) {
				checkSearch(t, b.build(t, goarch), b.outside)
			})
		}
	}
}

// checkSearch checks that every site offline finds in bin lies in what start-up
// discovery would search; outside says whether the program must have some outside
// package sdt (a build with inlining).
func checkSearch(t *testing.T, bin string, outside bool) {
	t.Helper()
	full, err := offline.Discover(bin)
	if err != nil {
		t.Fatal(err)
	}
	text, ranges, how, err := sled.FileSearch(bin)
	if err != nil {
		t.Fatal(err)
	}
	if ranges == nil || !strings.Contains(how, "inline trees") {
		t.Fatalf("search: %s", how)
	}
	searched, others := 0, 0
	for _, r := range ranges {
		searched += r[1] - r[0]
	}
	for _, s := range full.Sites {
		if !sled.InRanges(ranges, int(uint64(s.Addr)-text)) {
			h := s.Describe()
			t.Errorf("site %#x (%s, %s:%d, %s) is not searched", s.Addr, h.Func, h.File, h.Line, s.Kind)
		}
		if h := s.Describe(); h.Module != sled.ProbePackage() {
			others++
		}
	}
	if outside && others == 0 {
		t.Errorf("no site outside package sdt found in %s", bin)
	}
	t.Logf("%d sites (%d outside sdt); %d of %d bytes of text searched, %d ranges", len(full.Sites), others, searched, full.TextBytes, len(ranges))
}

// program builds pkg with flags.
func program(pkg string, flags ...string) func(*testing.T, string) string {
	return func(t *testing.T, goarch string) string { return testbin.Build(t, "", goarch, pkg, flags...) }
}

// testProgram builds the test binary of the package in dir.
func testProgram(dir string) func(*testing.T, string) string {
	return func(t *testing.T, goarch string) string { return testbin.BuildTest(t, goarch, dir) }
}

// fbtExample builds fbt's example program with its rules.
func fbtExample(t *testing.T, goarch string) string {
	dir, err := filepath.Abs("../internal/fbt/testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	return testbin.BuildWithRules(t, goarch, dir, "./cmd/ex", filepath.Join(dir, "fbt.rules"))
}
