//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStatByStack: stat --by stack folds the command's fires by Go stack in the
// process; --pprof writes a profile go tool pprof reads, with the functions and
// counts of the fires, and --folded the lines flamegraph.pl reads.
func TestStatByStack(t *testing.T) {
	bin := buildStartup(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	dir := t.TempDir()
	prof, fold := filepath.Join(dir, "fires.pb.gz"), filepath.Join(dir, "fires.folded")
	var out, errb bytes.Buffer
	err := run([]string{"stat", "boot:::", "--by", "stack", "--pprof", prof, "--folded", fold, "--", bin, "700", "0"}, &out, &errb)
	if err != nil {
		t.Fatalf("stat: %v\n%s", err, errb.String())
	}
	if !regexp.MustCompile(`boot:main::step\n\s+main\.fire\n\s+\S+main\.go:\d+\n\s+main\.main\n`).MatchString(out.String()) ||
		!strings.Contains(out.String(), "  700\n") {
		t.Fatalf("text:\n%s", out.String())
	}

	top, err := exec.Command("go", "tool", "pprof", "-top", prof).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, top)
	}
	// flat count of the functions that fired; cumulative of their callers
	for _, re := range []string{
		`Total samples = 701\b`,
		`(?m)^\s+700\s+[\d.]+%\s+[\d.]+%\s+700\s+[\d.]+%\s+main\.fire$`,
		`(?m)^\s+0\s+0%\s+[\d.]+%\s+700\s+[\d.]+%\s+main\.main$`,
		`(?m)^\s+0\s+0%\s+[\d.]+%\s+701\s+100%\s+runtime\.main$`,
	} {
		if !regexp.MustCompile(re).Match(top) {
			t.Errorf("pprof -top: no %s in\n%s", re, top)
		}
	}
	traces, err := exec.Command("go", "tool", "pprof", "-traces", prof).CombinedOutput()
	if err != nil || !strings.Contains(string(traces), "lib.init.0") || !strings.Contains(string(traces), "probe:  boot:main::step") {
		t.Errorf("pprof -traces: %v\n%s", err, traces)
	}

	b, err := os.ReadFile(fold)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"runtime.goexit;runtime.main;main.main;main.fire;boot:main::step 700\n",
		"lib.init.0;github.com/gosdt/gosdt/cmd/sdtctl/testdata/startup/lib.load;boot:github.com/gosdt/gosdt/cmd/sdtctl/testdata/startup/lib::loaded 1\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("folded: no %q in\n%s", want, b)
		}
	}
}

// TestStatFilesNeedStack: --pprof and --folded without --by stack are refused,
// and no file is written.
func TestStatFilesNeedStack(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "p")
	var out, errb bytes.Buffer
	if err := run([]string{"stat", "boot:::", "--pprof", prof, "-p", "1"}, &out, &errb); exitCode(err) != exitUsage {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(prof); err == nil {
		t.Fatal("a file was written")
	}
}
