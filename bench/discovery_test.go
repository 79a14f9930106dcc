package bench

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

var (
	discoveryFlag = flag.Bool("discovery", false, "TestDiscoveryScaling: build programs of 0, 2k and 20k generated functions (minutes)")
	discoveryQemu = flag.Bool("discovery-arm64", false, "BenchmarkDiscovery: also build the programs for linux/arm64 and run them under qemu-aarch64-static (emulated: per-site figures are not an arm64 machine's)")
)

// TestDiscoveryScaling logs start-up discovery time against text size. It is a test
// that logs a table, not a benchmark: each point is a separate program (built with go
// build, minutes for the largest) whose discovery runs once, at its start, so a b.N
// loop has nothing to repeat. Each program is run 5 times; the table has the median.
// Every 16th generated function holds a probe site. The heavy part runs only with
// -discovery; the row of this test binary itself always runs.
func TestDiscoveryScaling(t *testing.T) {
	d := sdt.Discovery()
	if d.Reason != "" {
		t.Skip("no discovery here:", d.Reason)
	}
	t.Logf("this test binary: text %.1f MB, %d candidates, %d sites, discovery %v", float64(d.TextBytes)/1e6, d.Candidates, d.Sites, d.Elapsed)
	if !*discoveryFlag || testing.Short() {
		t.Skip("generated programs: run with -discovery")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goSum, _ := os.ReadFile(filepath.Join(root, "go.sum"))
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	t.Logf("%8s %10s %10s %6s %12s %10s", "funcs", "text MB", "candidates", "sites", "discovery", "us/MB")
	for _, n := range []int{0, 2000, 20000} {
		dir := t.TempDir()
		writeProgram(t, dir, n, root, goMod, goSum)
		bin := filepath.Join(dir, "prog")
		start := time.Now()
		cmd := exec.Command(gobin, "build", "-o", bin, ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build (%d funcs): %v\n%s", n, err, out)
		}
		build := time.Since(start)
		var runs []time.Duration
		var text, cands, sites int
		for range 5 {
			out, err := exec.Command(bin).Output()
			if err != nil {
				t.Fatalf("%s: %v", bin, err)
			}
			var ns int64
			if _, err := fmt.Sscanf(string(out), "text=%d candidates=%d sites=%d elapsed=%d", &text, &cands, &sites, &ns); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			runs = append(runs, time.Duration(ns))
		}
		slices.Sort(runs)
		med := runs[len(runs)/2]
		t.Logf("%8d %10.1f %10d %6d %12v %10.0f   (build %v)", n, float64(text)/1e6, cands, sites, med,
			float64(med.Microseconds())/(float64(text)/1e6), build.Round(time.Second))
	}
}

// writeProgram writes a module in dir: n generated functions, each a little
// arithmetic, every 16th with a probe site, all reachable from main.
func writeProgram(t testing.TB, dir string, n int, root string, goMod, goSum []byte) {
	writeProgramEvery(t, dir, n, 16, false, root, goMod, goSum)
}

// writeProgramEvery is writeProgram with a probe site in every every-th function,
// and with helper a small function inlined into every one, as real code inlines
// helpers: then every function has an inline tree.
// The program prints its start-up discovery; with GOSDT_DISCOVERY_LOOP=k it also runs
// the scan k more times (sled.Discover, which only reads) and prints the fastest
// ("best=ns"), and with GOSDT_DISCOVERY_PROFILE=file it writes a CPU profile of them
// (run it with SDT_PATCH=off: a rescan of sealed sites finds sleds, not checks).
func writeProgramEvery(t testing.TB, dir string, n, every int, helper bool, root string, goMod, goSum []byte) {
	mod := "module prog\n\ngo 1.26.0\n\nrequire github.com/gosdt/gosdt v0.0.0\n\nreplace github.com/gosdt/gosdt => " + root + "\n"
	// The gosdt module's own requirements, so that no network is needed.
	if i := strings.Index(string(goMod), "require ("); i >= 0 {
		mod += "\n" + string(goMod[i:])
	}
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "go.sum"), goSum, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/gosdt/gosdt/sdt"
	"github.com/gosdt/gosdt/sled"
)

var probes = [4]sdt.P1[int]{
	sdt.Define1[int]("gen", "p0", "x"), sdt.Define1[int]("gen", "p1", "x"),
	sdt.Define1[int]("gen", "p2", "x"), sdt.Define1[int]("gen", "p3", "x"),
}

var fns []func(uint64) uint64

// mix is what the functions inline when they inline something.
func mix(x, k uint64) uint64 { return (x ^ x>>29) * k }

func main() {
	x := uint64(len(os.Args))
	if len(os.Args) > 5 { // never: keeps every function reachable
		for _, f := range fns {
			x = f(x)
		}
	}
	d := sdt.Discovery()
	fmt.Printf("text=%d candidates=%d sites=%d elapsed=%d x=%d\n", d.TextBytes, d.Candidates, d.Sites, d.Elapsed.Nanoseconds(), x)
	k, _ := strconv.Atoi(os.Getenv("GOSDT_DISCOVERY_LOOP"))
	if k <= 0 {
		return
	}
	if p := os.Getenv("GOSDT_DISCOVERY_PROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			panic(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	best := time.Duration(1 << 62)
	for range k {
		t := sled.Discover()
		if len(t.Sites) != d.Sites {
			panic(fmt.Sprintf("rescan found %d sites, start-up %d", len(t.Sites), d.Sites))
		}
		best = min(best, t.Elapsed)
	}
	fmt.Printf("best=%d\n", best.Nanoseconds())
}
`), 0o644))
	const perFile = 1000
	for f := 0; f*perFile < n; f++ {
		var b strings.Builder
		b.WriteString("package main\n\nimport \"github.com/gosdt/gosdt/sdt\"\n\nvar _ = sdt.Probe1[int]\n\nfunc init() {\n\tfns = append(fns")
		for i := f * perFile; i < min(n, (f+1)*perFile); i++ {
			fmt.Fprintf(&b, ", f%d", i)
		}
		b.WriteString(")\n}\n")
		for i := f * perFile; i < min(n, (f+1)*perFile); i++ {
			fmt.Fprintf(&b, "\n//go:noinline\nfunc f%d(x uint64) uint64 {\n", i)
			for j := range 24 {
				fmt.Fprintf(&b, "\tx = x*%d + %d\n\tx ^= x >> %d\n", 2*(i+j)+3, i*31+j, 1+(i+j)%61)
			}
			if helper {
				fmt.Fprintf(&b, "\tx = mix(x, %d)\n", 2*i+1)
			}
			if i%every == 0 {
				fmt.Fprintf(&b, "\tsdt.Probe1(&probes[%d], int(x))\n", i/every%4)
			}
			b.WriteString("\treturn x\n}\n")
		}
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("gen%03d.go", f)), []byte(b.String()), 0o644))
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDiscovery runs generated programs from exec to exit and reports their own
// start-up discovery (the text scan and the proof of every site), per site and per MB
// of text: us/site for 1,250 small functions with one site each, ms/MB for a program
// with one site; with -discovery also one site in 30 MB of text (a build of minutes),
// in functions that inline nothing and in functions that each inline a helper
// ("inlined", as real code does: every function then has an inline tree).
// Each iteration is one start (cold caches, as a user pays it); the figures are the
// mean over b.N starts. The warm figures are the fastest of 20 discoveries more in one
// of the processes (SDT_PATCH=off, so that its sites are still the compiler's): the
// same work on text the process has read once, which separates discovery's own cost
// from that of the first read of each page (on this project's VM, a few microseconds
// per 4 KiB page: a hypervisor exit). With -discovery-arm64 the programs are also
// built for arm64 and run under qemu-aarch64-static: emulated, so their times say how
// the arm64 code path compares with itself before and after a change, not what an
// arm64 CPU takes.
func BenchmarkDiscovery(b *testing.B) {
	type prog struct {
		funcs, every int
		helper       bool
	}
	progs := []prog{{1250, 1, false}, {2000, 1 << 30, false}}
	if *discoveryFlag {
		progs = append(progs, prog{45000, 1 << 30, false}, prog{45000, 1 << 30, true})
	}
	goarchs := []string{runtime.GOARCH}
	if *discoveryQemu && runtime.GOARCH != "arm64" {
		if _, err := exec.LookPath("qemu-aarch64-static"); err != nil {
			b.Fatal("-discovery-arm64: ", err)
		}
		goarchs = append(goarchs, "arm64")
	}
	for _, goarch := range goarchs {
		for _, p := range progs {
			benchDiscovery(b, goarch, p.funcs, p.every, p.helper)
		}
	}
}

// benchDiscovery runs one generated program, for goarch (under qemu if not this
// machine's), b.N times.
func benchDiscovery(b *testing.B, goarch string, funcs, every int, helper bool) {
	bin := discoveryProgram(b, goarch, funcs, every, helper)
	sites := (funcs + every - 1) / every
	name := fmt.Sprintf("funcs=%d/sites=%d", funcs, sites)
	if helper {
		name += "/inlined"
	}
	if goarch != runtime.GOARCH {
		name += "/goarch=" + goarch + "-qemu"
	}
	// run runs the program once with env and returns its start-up discovery, the
	// fastest of its rescans (0 without GOSDT_DISCOVERY_LOOP) and its text's size.
	run := func(b *testing.B, env ...string) (start, best time.Duration, text int) {
		cmd := exec.Command(bin)
		if goarch != runtime.GOARCH {
			cmd = exec.Command("qemu-aarch64-static", bin)
		}
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%s: %v", bin, err)
		}
		var cands, found int
		var ns, bestNS int64
		if _, err := fmt.Sscanf(string(out), "text=%d candidates=%d sites=%d elapsed=%d", &text, &cands, &found, &ns); err != nil {
			b.Fatalf("output %q: %v", out, err)
		}
		if found != sites {
			b.Fatalf("%s: found %d sites, want %d", bin, found, sites)
		}
		if i := strings.Index(string(out), "best="); i >= 0 {
			fmt.Sscanf(string(out[i:]), "best=%d", &bestNS)
		}
		return time.Duration(ns), time.Duration(bestNS), text
	}
	b.Run(name, func(b *testing.B) {
		var total time.Duration
		var text int
		for b.Loop() {
			start, _, n := run(b)
			total, text = total+start, n
		}
		_, warm, _ := run(b, "SDT_PATCH=off", "GOSDT_DISCOVERY_LOOP=20")
		mb := float64(text) / 1e6
		per := float64(total.Nanoseconds()) / float64(b.N)
		b.ReportMetric(per/1e3/float64(sites), "us/site")
		b.ReportMetric(per/1e6/mb, "ms/MB")
		b.ReportMetric(per/1e6, "ms/start")
		b.ReportMetric(float64(warm.Nanoseconds())/1e3/float64(sites), "warm-us/site")
		b.ReportMetric(float64(warm.Nanoseconds())/1e6/mb, "warm-ms/MB")
		b.ReportMetric(mb, "text-MB")
	})
}

type programKey struct {
	goarch       string
	funcs, every int
	helper       bool
}

var discoveryBuilt = map[programKey]string{}

// discoveryProgram builds the generated program of funcs functions, a site in every
// every-th, each inlining a helper if helper, for linux/goarch, once per test binary.
func discoveryProgram(b *testing.B, goarch string, funcs, every int, helper bool) string {
	key := programKey{goarch, funcs, every, helper}
	if p, ok := discoveryBuilt[key]; ok {
		return p
	}
	root, err := filepath.Abs("..")
	must(b, err)
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	must(b, err)
	goSum, _ := os.ReadFile(filepath.Join(root, "go.sum"))
	dir, err := os.MkdirTemp("", "gosdt-discovery")
	must(b, err)
	b.Cleanup(func() { os.RemoveAll(dir) })
	writeProgramEvery(b, dir, funcs, every, helper, root, goMod, goSum)
	bin := filepath.Join(dir, "prog")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build (%d funcs, %s): %v\n%s", funcs, goarch, err, out)
	}
	if dst := os.Getenv("GOSDT_KEEP_PROGRAM"); dst != "" {
		// Keep a copy for profiling (GOSDT_DISCOVERY_LOOP, GOSDT_DISCOVERY_PROFILE).
		cp := exec.Command("cp", bin, fmt.Sprintf("%s.%s.%d.%d.%t", dst, goarch, funcs, every, helper))
		must(b, cp.Run())
	}
	discoveryBuilt[key] = bin
	return bin
}
