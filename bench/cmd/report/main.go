// Command report measures what a disabled gosdt probe costs on this machine and
// rewrites this CPU's figures in bench/README.md (between the "report:begin SLUG" and
// "report:end SLUG" markers, SLUG naming the CPU model, e.g. amd-epyc; a CPU not yet in
// the README gets a new section), bench/disabled-SLUG.svg and bench/results/SLUG/, so
// that anyone can refresh them and figures of other CPUs stay beside them:
//
//	go run ./bench/cmd/report          # full run, ~10 minutes on a 2-core VM
//	go run ./bench/cmd/report -quick   # smoke run: a few seconds of benchmarks, README untouched
//
// The headline comparison, sealed against branch, is one function at one address: the
// benchmark binary runs alternately as is (sites sealed at start-up) and with
// SDT_PATCH=off (the same sites keep the compiler's check), -count times each, and
// only the "branch" lines of the SDT_PATCH=off runs are kept. Alternating spreads the
// VM's drift over both states. The peers (slog, runtime/trace, atomic.Bool) are
// other functions at other addresses and are compared as such.
//
// It needs benchstat (go install golang.org/x/perf/cmd/benchstat@latest; looked up in
// PATH, then in $(go env GOPATH)/bin) and valgrind for the instruction counts; each
// missing tool is said in the output and in the README, and the rest still runs.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	quick := flag.Bool("quick", false, "smoke run: tiny counts, results in a temporary directory, README untouched")
	count := flag.Int("count", 10, "runs of BenchmarkDisabled per state (sealed, branch)")
	benchtime := flag.String("benchtime", "0.1s", "-test.benchtime of each BenchmarkDisabled run")
	iters := flag.Int("callgrind", 200000, "iterations per kernel under callgrind (0: skip)")
	out := flag.String("o", "", "directory for results/, disabled.svg and README.md (default: bench/ of this module; with -quick a temporary directory)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("report: ")

	root, err := moduleRoot()
	if err != nil {
		log.Fatal(err)
	}
	bench := filepath.Join(root, "bench")
	dir := *out
	if *quick {
		*count, *benchtime, *iters = 2, "2000x", 2000
		if dir == "" {
			if dir, err = os.MkdirTemp("", "gosdt-report"); err != nil {
				log.Fatal(err)
			}
			defer os.RemoveAll(dir)
		}
	}
	if dir == "" {
		dir = bench
	}
	r := &run{root: root, bench: bench, dir: dir, quick: *quick}
	if err := r.all(*count, *benchtime, *iters); err != nil {
		log.Fatal(err)
	}
}

type run struct {
	root, bench, dir string
	quick            bool
}

func (r *run) all(count int, benchtime string, iters int) error {
	model := cpuModel()
	slug := cpuSlug(model)
	results := filepath.Join(r.dir, "results", slug)
	if err := os.MkdirAll(results, 0o755); err != nil {
		return err
	}
	svg := "disabled-" + slug + ".svg"

	bin := filepath.Join(r.dir, "bench.test")
	defer os.Remove(bin)
	if err := r.cmd(nil, "go", "test", "-c", "-o", bin, "./bench").Run(); err != nil {
		return fmt.Errorf("build the benchmarks: %w", err)
	}
	machine := describeMachine(model, r.brand(bin))
	log.Print(machine)

	// BenchmarkDisabled and BenchmarkAlignment, alternating the two states of the gosdt
	// kernels.
	var raw bytes.Buffer
	for i := range count {
		for _, state := range []string{"sealed", "branch"} {
			env := []string{"SDT_PATCH=on"}
			if state == "branch" {
				env = []string{"SDT_PATCH=off"}
			}
			c := r.cmd(env, bin, "-test.run", "^$", "-test.bench", "^Benchmark(Disabled|Alignment)$", "-test.count", "1", "-test.benchtime", benchtime)
			c.Dir = r.bench
			c.Stdout = nil
			o, err := c.Output()
			if err != nil {
				return fmt.Errorf("BenchmarkDisabled (%s): %w\n%s", state, err, o)
			}
			keepLines(&raw, o, i == 0 && state == "sealed", state)
		}
		log.Printf("BenchmarkDisabled: run %d/%d", i+1, count)
	}
	if !strings.Contains(raw.String(), "/variant=branch") || !strings.Contains(raw.String(), "/variant=sealed") {
		return errors.New("BenchmarkDisabled: the runs did not give both a sealed and a branch variant (is patching possible here?)")
	}
	benchTxt := filepath.Join(results, "bench.txt")
	if err := os.WriteFile(benchTxt, raw.Bytes(), 0o644); err != nil {
		return err
	}

	// Chart and table of medians.
	var table bytes.Buffer
	chart := r.cmd(nil, "go", "run", "./bench/internal/chart", "-o", filepath.Join(r.dir, svg))
	chart.Stdin, chart.Stdout = bytes.NewReader(raw.Bytes()), &table
	if err := chart.Run(); err != nil {
		return fmt.Errorf("chart: %w", err)
	}

	// benchstat.
	stat := "benchstat not found: go install golang.org/x/perf/cmd/benchstat@latest"
	if bs := findBenchstat(); bs != "" {
		// The headline first: branch as the base, sealed against it; then every variant
		// against none.
		var all []string
		for _, col := range []string{"/variant@(branch sealed)", "/variant@(none branch sealed slog trace atomicbool)"} {
			c := r.cmd(nil, bs, "-col", col, "-filter", ".name:Disabled", benchTxt)
			c.Stdout = nil
			o, err := c.Output()
			if err != nil {
				return fmt.Errorf("benchstat -col %s: %w", col, err)
			}
			all = append(all, "$ benchstat -col '"+col+"' -filter .name:Disabled results/"+slug+"/bench.txt\n"+strings.TrimSpace(string(o)))
		}
		stat = strings.Join(all, "\n\n")
	} else {
		log.Print(stat)
	}

	// Instruction counts.
	cg := "valgrind not found: instruction counts not measured"
	if iters > 0 {
		if _, err := exec.LookPath("valgrind"); err != nil {
			log.Print(cg)
		} else {
			c := r.cmd(nil, "sh", filepath.Join(r.bench, "callgrind.sh"), fmt.Sprint(iters))
			c.Stdout = nil
			o, err := c.Output()
			if err != nil {
				return fmt.Errorf("callgrind.sh: %w", err)
			}
			if err := os.WriteFile(filepath.Join(results, "callgrind.txt"), o, 0o644); err != nil {
				return err
			}
			cg = callgrindTable(string(o))
		}
	}

	section := fmt.Sprintf(`### %s

%s
Load when the report started: %s. Command: `+"`go run ./bench/cmd/report -count %d -benchtime %s -callgrind %d`"+`.
Raw outputs: results/%s/bench.txt, results/%s/callgrind.txt.

#### Instructions per disabled site (callgrind, deterministic)

(Ir(variant) − Ir(none)) / (iterations × sites). sealed and branch are the same
function at the same address, run as is and with SDT_PATCH=off.

%s

#### Time per loop iteration (medians of %d runs per state, alternating sealed and branch)

Spread over code alignments (BenchmarkAlignment: each loop at %d paddings; lowest and
highest median ns per iteration). Two variants whose ranges overlap are not told apart
by this CPU; only sealed against branch is the same function at the same address.

%s

![chart](%s)

%s
benchstat (sealed and branch: same function, same address; the others: other functions):

`+"```"+`
%s
`+"```"+`
`, model, machine, loadavg(), count, benchtime, iters, slug, slug, cg, count, pads, alignmentTable(raw.String()), svg, strings.TrimSpace(table.String())+"\n", stat)

	readme := filepath.Join(r.dir, "README.md")
	if r.quick && r.dir != r.bench {
		src, err := os.ReadFile(filepath.Join(r.bench, "README.md"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(readme, src, 0o644); err != nil {
			return err
		}
	}
	if err := replaceSection(readme, slug, section); err != nil {
		return err
	}
	log.Printf("wrote %s, %s, %s", readme, filepath.Join(r.dir, svg), benchTxt)
	return nil
}

// keepLines appends the benchmark lines of out to w (and its header lines when
// header): for state "branch", only the gosdt kernels' lines, which are the only ones
// SDT_PATCH=off changes.
func keepLines(w *bytes.Buffer, out []byte, header bool, state string) {
	for _, l := range strings.SplitAfter(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "Benchmark"):
			if state == "branch" && !strings.Contains(l, "/variant=branch") {
				continue
			}
			w.WriteString(l)
		case header && (strings.HasPrefix(l, "goos:") || strings.HasPrefix(l, "goarch:") ||
			strings.HasPrefix(l, "pkg:") || strings.HasPrefix(l, "cpu:")):
			w.WriteString(l)
		}
	}
}

// callgrindTable turns callgrind.sh's output into a Markdown table of added/site,
// shapes in rows and variants in columns.
func callgrindTable(out string) string {
	var shapes, variants []string
	val := map[[2]string]string{}
	for _, l := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(l)
		if len(f) != 6 {
			continue
		}
		shape, variant, ok := strings.Cut(f[0], "_")
		if !ok || variant == "none" {
			continue
		}
		if !contains(shapes, shape) {
			shapes = append(shapes, shape)
		}
		if !contains(variants, variant) {
			variants = append(variants, variant)
		}
		val[[2]string{shape, variant}] = f[5]
	}
	// sealed and branch first: they are the headline.
	return shapeTable(shapes, firstThen([]string{"branch", "sealed"}, variants), func(s, v string) string {
		return val[[2]string{s, v}]
	})
}

// firstThen is first followed by the elements of rest that are not in it.
func firstThen(first, rest []string) []string {
	order := slices.Clone(first)
	for _, v := range rest {
		if !contains(order, v) {
			order = append(order, v)
		}
	}
	return order
}

// shapeTable is a Markdown table with shapes in rows, variants in columns and cell's
// text in each cell.
func shapeTable(shapes, variants []string, cell func(shape, variant string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| shape | %s |\n|---|%s\n", strings.Join(variants, " | "), strings.Repeat("---:|", len(variants)))
	for _, s := range shapes {
		fmt.Fprintf(&b, "| %s |", s)
		for _, v := range variants {
			fmt.Fprintf(&b, " %s |", cell(s, v))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Each CPU model's section lies between its own markers; a model not in the README yet
// gets a new section just before nextMarker, so every CPU measured stays shown.
const (
	markerNote = "(written by go run ./bench/cmd/report; do not edit)"
	nextMarker = "<!-- report:next (a CPU not measured yet gets its section here) -->"
)

func beginMarker(slug string) string { return "<!-- report:begin " + slug + " " + markerNote + " -->" }
func endMarker(slug string) string   { return "<!-- report:end " + slug + " -->" }

// replaceSection puts section between slug's markers of the README at path, or, when
// the README has none yet, adds it with its markers before nextMarker.
func replaceSection(path, slug, section string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(src)
	begin, end := beginMarker(slug), endMarker(slug)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	switch {
	case i >= 0 && j > i:
		s = s[:i+len(begin)] + "\n" + section + s[j:]
	case i < 0 && j < 0:
		k := strings.Index(s, nextMarker)
		if k < 0 {
			return fmt.Errorf("%s: no %q marker for a new CPU's section", path, nextMarker)
		}
		s = s[:k] + begin + "\n" + section + end + "\n\n" + s[k:]
	default:
		return fmt.Errorf("%s: the %q and %q markers are not a pair", path, begin, end)
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

func (r *run) cmd(env []string, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir = r.root
	c.Env = append(os.Environ(), env...)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	return c
}

func moduleRoot() (string, error) {
	o, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(o))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the gosdt module")
	}
	return filepath.Dir(mod), nil
}

func findBenchstat() string {
	if p, err := exec.LookPath("benchstat"); err == nil {
		return p
	}
	if o, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(o))) {
			p := filepath.Join(d, "bin", "benchstat")
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}

// cpuModel is the CPU's model name as the kernel reports it (as lscpu prints it).
func cpuModel() string {
	if name := firstCPU()["model name"]; name != "" {
		return name
	}
	return "unknown CPU"
}

// firstCPU is the first processor's fields in /proc/cpuinfo; empty where there is none.
func firstCPU() map[string]string {
	fields := map[string]string{}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return fields
	}
	first, _, _ := strings.Cut(string(b), "\n\n")
	for _, l := range strings.Split(first, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return fields
}

// cpuSlug names a CPU model in file names and markers: "Intel(R) Xeon(R) Processor"
// is intel-xeon, "AMD EPYC 7B13 64-Core Processor" amd-epyc-7b13-64-core.
func cpuSlug(model string) string {
	m := strings.ToLower(model)
	for _, noise := range []string{"(r)", "(tm)", " processor", " cpu"} {
		m = strings.ReplaceAll(m, noise, "")
	}
	var b strings.Builder
	dash := false
	for _, c := range m {
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
		} else {
			dash = true
		}
	}
	if b.Len() == 0 {
		return "unknown-cpu"
	}
	return b.String()
}

// describeMachine names the CPU model, kernel, Go version and date of the figures.
func describeMachine(model, brand string) string {
	kernel := runtime.GOOS
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("Measured %s on **%s** (%s%d logical CPUs), %s, %s %s/%s.",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), model, cpuIdentity(brand), runtime.NumCPU(), kernel, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// cpuIdentity adds what a VM's model name hides: the family and model numbers, which
// tell a core generation apart (AMD family 25 is Zen 3 or 4, 26 Zen 5), and the
// CPUID brand string (what go test prints as "cpu:"), when it differs from the
// kernel's name.
func cpuIdentity(brand string) string {
	cpu := firstCPU()
	var parts []string
	if family, number := cpu["cpu family"], cpu["model"]; family != "" && number != "" {
		parts = append(parts, "family "+family+" model "+number)
	}
	if brand != "" && brand != cpu["model name"] {
		parts = append(parts, "CPUID brand \""+brand+"\"")
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + ", "
}

// brand is the CPUID brand string, as the benchmark binary bin prints it ("cpu: ..."
// in go test's header); "" if it prints none.
func (r *run) brand(bin string) string {
	c := r.cmd(nil, bin, "-test.run", "^$", "-test.bench", "^BenchmarkDisabled$/^shape=chain$/^variant=none$", "-test.benchtime", "1x")
	c.Dir = r.bench
	c.Stdout = nil
	o, _ := c.Output()
	for _, l := range strings.Split(string(o), "\n") {
		if v, ok := strings.CutPrefix(l, "cpu: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return "load average " + strings.Join(f[:3], ", ")
}

// pads is how many paddings BenchmarkAlignment runs each kernel at (kernels.Pads).
const pads = 4

// alignLine matches "BenchmarkAlignment/shape=wide/variant=sealed/pad=2-2  123  4.5 ns/op".
var alignLine = regexp.MustCompile(`^BenchmarkAlignment/shape=([^/]+)/variant=([^/]+)/pad=(\d+)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

// alignmentTable gives, per shape and variant, the lowest and highest of the per-padding
// medians of BenchmarkAlignment in out, as a Markdown table.
func alignmentTable(out string) string {
	type key struct{ shape, variant, pad string }
	runs := map[key][]float64{}
	var shapes, variants []string
	for _, l := range strings.Split(out, "\n") {
		m := alignLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			continue
		}
		k := key{m[1], m[2], m[3]}
		runs[k] = append(runs[k], v)
		if !contains(shapes, m[1]) {
			shapes = append(shapes, m[1])
		}
		if !contains(variants, m[2]) {
			variants = append(variants, m[2])
		}
	}
	if len(runs) == 0 {
		return "(no BenchmarkAlignment lines)\n"
	}
	return shapeTable(shapes, firstThen([]string{"none", "branch", "sealed"}, variants), func(s, v string) string {
		lo, hi := math.Inf(1), math.Inf(-1)
		for k, xs := range runs {
			if k.shape == s && k.variant == v {
				m := median(xs)
				lo, hi = math.Min(lo, m), math.Max(hi, m)
			}
		}
		if math.IsInf(lo, 1) {
			return ""
		}
		return fmt.Sprintf("%.2f–%.2f", lo, hi)
	})
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
