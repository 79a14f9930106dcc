package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestQuick runs the report's smoke mode end to end into a temporary directory and
// checks that it wrote both states of the same-address comparison and a README
// section naming the CPU. It builds the benchmark binary (tens of seconds), so it
// does not run under -short.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the benchmarks: not under -short")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("the sealed/branch comparison needs patching (linux/amd64), not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "run", ".", "-quick", "-callgrind", "0", "-o", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("report -quick: %v\n%s", err, out)
	}
	slug := cpuSlug(cpuModel())
	raw, err := os.ReadFile(filepath.Join(dir, "results", slug, "bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"shape=chain/variant=sealed", "shape=chain/variant=branch", "shape=wide/variant=none", "Alignment/shape=wide/variant=branch/pad=3"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("results/%s/bench.txt has no %s line", slug, want)
		}
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(string(readme), beginMarker(slug)), strings.Index(string(readme), endMarker(slug))
	if i < 0 || j < i {
		t.Fatalf("README has no section between the markers of %s", slug)
	}
	sec := string(readme)[i:j]
	if !strings.Contains(sec, "Measured ") || !strings.Contains(sec, "| chain | sealed |") || !strings.Contains(sec, cpuModel()) {
		t.Errorf("README section lacks the machine line or the table:\n%s", sec)
	}
}

func TestCallgrindTable(t *testing.T) {
	out := `kernel Ir iters sites Ir/iteration added/site
chain_none 14007 2000 1 7.00 0.00
chain_sealed 18016 2000 1 9.01 2.00
chain_slog 128016 2000 1 64.01 57.00
chain_branch 20016 2000 1 10.01 3.00
`
	got := callgrindTable(out)
	want := "| shape | branch | sealed | slog |\n|---|---:|---:|---:|\n| chain | 3.00 | 2.00 | 57.00 |\n"
	if got != want {
		t.Errorf("callgrindTable:\n%s\nwant\n%s", got, want)
	}
}

func TestAlignmentTable(t *testing.T) {
	out := `BenchmarkDisabled/shape=chain/variant=none-2  100  1.00 ns/op
BenchmarkAlignment/shape=chain/variant=none/pad=0-2  100  1.10 ns/op
BenchmarkAlignment/shape=chain/variant=none/pad=0-2  100  1.30 ns/op
BenchmarkAlignment/shape=chain/variant=none/pad=1-2  100  1.50 ns/op
BenchmarkAlignment/shape=chain/variant=sealed/pad=0-2  100  2.00 ns/op
BenchmarkAlignment/shape=chain/variant=sealed/pad=1-2  100  2.50 ns/op
BenchmarkAlignment/shape=chain/variant=slog/pad=0-2  100  4.00 ns/op
BenchmarkAlignment/shape=wide/variant=none/pad=0-2  100  3.00 ns/op
`
	got := alignmentTable(out)
	want := "| shape | none | branch | sealed | slog |\n|---|---:|---:|---:|---:|\n" +
		"| chain | 1.20–1.50 |  | 2.00–2.50 | 4.00–4.00 |\n" +
		"| wide | 3.00–3.00 |  |  |  |\n"
	if got != want {
		t.Errorf("alignmentTable:\n%s\nwant\n%s", got, want)
	}
}

func TestCPUSlug(t *testing.T) {
	for model, want := range map[string]string{
		"Intel(R) Xeon(R) Processor":      "intel-xeon",
		"AMD EPYC":                        "amd-epyc",
		"AMD EPYC 7B13 64-Core Processor": "amd-epyc-7b13-64-core",
		"  (R) ":                          "unknown-cpu",
	} {
		if got := cpuSlug(model); got != want {
			t.Errorf("cpuSlug(%q) = %q, want %q", model, got, want)
		}
	}
}

// TestReplaceSection: a CPU's section is rewritten in place, a new CPU's is added
// before the next marker, and the other CPUs' sections are kept.
func TestReplaceSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	start := "intro\n" + beginMarker("intel-xeon") + "\nold intel\n" + endMarker("intel-xeon") + "\n\n" + nextMarker + "\ntail\n"
	if err := os.WriteFile(path, []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(path, "amd-epyc", "amd figures\n"); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(path, "intel-xeon", "new intel\n"); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(path, "amd-epyc", "amd again\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "intro\n" + beginMarker("intel-xeon") + "\nnew intel\n" + endMarker("intel-xeon") + "\n\n" +
		beginMarker("amd-epyc") + "\namd again\n" + endMarker("amd-epyc") + "\n\n" + nextMarker + "\ntail\n"
	if string(got) != want {
		t.Errorf("README after three reports:\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(path, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(path, "amd-epyc", "x\n"); err == nil {
		t.Error("a README without the next marker: no error")
	}
}
