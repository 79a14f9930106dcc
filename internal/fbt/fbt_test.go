package fbt_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/fbt"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# ok\nexample.com/a.F\nexample.com/a\n", "r:3: want package/path.Function"},
		{"a.F b.G\n", "r:1: a pattern has no spaces"},
		{"\n\nexample.com/a.\n", "r:3: empty function name"},
		{"example.com/*.F\n", "r:1: the package path has no wildcards"},
		{"example.com/a.(DB).Get\n", "r:1: a method is written (*Type).Method"},
		{"example.com/a.(*DB.Get\n", "r:1: unbalanced parentheses"},
		{"example.com/a.A.B.C\n", "r:1: too many dots"},
		{"example.com/a.[a-\n", `r:1: '[' in "[a-": a function or type is a Go name, where * is the only wildcard`},
		{"example.com/a.F\x00x\n", `r:1: byte 15 is '\x00'`},
		{"example.com/a.(**Server).ServeHTTP\n", "r:1: a method's receiver is (*Type), with one *"},
		{"example.com/a.(*).Get\n", "r:1: a method is written (*Type).Method"},
		{"example.com/a.F-G\n", `r:1: '-' in "F-G"`},
	} {
		_, err := fbt.Parse("r", []byte(tc.in))
		var re *fbt.RuleError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want a RuleError with %q", tc.in, err, tc.want)
		}
	}
	rs, err := fbt.Parse("r", []byte("net/http.(*Client).Do  # a comment\n\n  example.com/app/handlers.*\nfmt.Println\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []fbt.Rule{{1, "net/http.(*Client).Do", "net/http", "(*Client).Do"},
		{3, "example.com/app/handlers.*", "example.com/app/handlers", "*"}, {4, "fmt.Println", "fmt", "Println"}}
	if fmt.Sprint(rs.Rules) != fmt.Sprint(want) {
		t.Errorf("rules %v, want %v", rs.Rules, want)
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, fn string
		want    bool
	}{
		{"*", "(*DB).Get", true},
		{"(*DB).*", "(*DB).Get", true},
		{"(*DB).*", "DB.Get", false},
		{"(*DB).*", "(*DBX).Get", false},
		{"DB.*", "DB.Len", true},
		{"Get*", "GetAll", true},
		{"Get", "GetAll", false},
		{"(*Stack).Pop", "(*Stack).Pop", true},
	} {
		if got := (fbt.Rule{Func: tc.pat}).Match(tc.fn); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.pat, tc.fn, got, tc.want)
		}
	}
}

func sdtctlBin(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("fbt's tests build and run linux programs")
	}
	if !patching() {
		// The rewrite is the same everywhere; what the tests check of sites (named,
		// sealed) needs discovery, which has no matcher for this GOARCH.
		t.Skipf("no site matcher for %s", runtime.GOARCH)
	}
	return testbin.Sdtctl(t)
}

func exampleDir(t *testing.T) string {
	d, err := filepath.Abs("testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// buildExample builds the example program with rules; it returns the binary and the
// build's output (the rules' reports).
func buildExample(t *testing.T, rules string, extra ...string) (string, string, error) {
	return buildCmd(t, "./cmd/ex", rules, extra...)
}

func buildCmd(t *testing.T, pkg, rules string, extra ...string) (string, string, error) {
	return buildCmdEnv(t, nil, pkg, rules, extra...)
}

func buildCmdEnv(t *testing.T, env []string, pkg, rules string, extra ...string) (string, string, error) {
	t.Helper()
	sdtctl := sdtctlBin(t)
	bin := filepath.Join(t.TempDir(), "ex")
	args := append([]string{"build", "-o", bin, "-toolexec", sdtctl + " toolexec -rules " + rules}, extra...)
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = exampleDir(t)
	cmd.Env = append(append(os.Environ(), "GOARCH="+runtime.GOARCH, "GOFLAGS=-mod=mod"), env...)
	out, err := cmd.CombinedOutput()
	return bin, string(out), err
}

// TestExampleHooks builds the example with rules and checks every call through
// in-process hooks: exact counts, arguments, results, order, SkipCall.
func TestExampleHooks(t *testing.T) {
	dir := exampleDir(t)
	bin, out, err := buildExample(t, filepath.Join(dir, "fbt.rules"))
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, want := range []string{
		"fbt.rules:11: example.com/fbtex/store.Nothing matches no function of package example.com/fbtex/store",
		"fbt.rules:12: example.com/fbtex/absent.* matches nothing: package example.com/fbtex/absent is not in this program",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("build output lacks %q:\n%s", want, out)
		}
	}
	got, err := testutil.Output(bin, nil, "hooks")
	if err != nil {
		t.Fatalf("ex hooks: %v\n%s", err, got)
	}
	want, err := os.ReadFile("testdata/hooks.golden")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("ex hooks:\n%s\nwant:\n%s", got, want)
	}
}

func patching() bool { return runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" }

// TestBadRules: a build with a rules file in error stops with the line at fault.
func TestBadRules(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "bad.rules")
	os.WriteFile(rules, []byte("# fine\nexample.com/fbtex/store.Fib\nexample.com/fbtex/store\n"), 0o600)
	_, out, err := buildExample(t, rules)
	if err == nil || !strings.Contains(out, "bad.rules:3: want package/path.Function") {
		t.Fatalf("build with a bad rules file: %v\n%s", err, out)
	}
	_, out, err = buildExample(t, "relative.rules")
	if err == nil || !strings.Contains(out, "give an absolute path") {
		t.Fatalf("build with a relative rules path: %v\n%s", err, out)
	}
}

// TestExampleSdtctl drives the instrumented program from outside: sdtctl lists the
// fbt probes sealed, enables one function's, and reads exact hit counts.
func TestExampleSdtctl(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("the control socket under qemu: covered by cmd/sdtctl's tests; hooks cover fbt here")
	}
	dir := exampleDir(t)
	bin, out, err := buildExample(t, filepath.Join(dir, "fbt.rules"))
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sdtctl := sdtctlBin(t)
	xdg := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	cmd := testutil.Command(bin, "serve")
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("serve did not start: %q", sc.Text())
	}
	pid := fmt.Sprint(cmd.Process.Pid)
	ctl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(sdtctl, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("sdtctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	work := func() {
		t.Helper()
		io.WriteString(in, "go\n")
		if !sc.Scan() || sc.Text() != "done" {
			t.Fatalf("workload: %q", sc.Text())
		}
	}
	list := ctl("list", "-p", pid, "fbt:example.com/fbtex/store:store.Fib:")
	for _, want := range []string{"fbt:example.com/fbtex/store:store.Fib:entry", "fbt:example.com/fbtex/store:store.Fib:return", "sealed-off", "n int", "latency_ns int64"} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %q:\n%s", want, list)
		}
	}
	work() // off
	ctl("enable", "-p", pid, "fbt:example.com/fbtex/store:store.Fib:", "fbt:example.com/fbtex/store:store.Div:")
	work()
	hits := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(ctl("list", "-p", pid, "--json", "fbt:example.com/fbtex/store::")), "\n") {
		var rec struct {
			Probe struct {
				Name string
				Hits uint64
			}
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		f := strings.Split(rec.Probe.Name, ":")
		hits[f[2]+":"+f[3]] += rec.Probe.Hits
	}
	// Fib(10) is 177 calls and Parallel(4, 5) 4*15; Div is called twice and returns
	// once, Div(1, 0) panics: its return fires from the traced copy's deferred check.
	want := map[string]uint64{"store.Fib:entry": 237, "store.Fib:return": 237, "store.Div:entry": 2, "store.Div:return": 2}
	for k, w := range want {
		if hits[k] != w {
			t.Errorf("hits of %s: %d, want %d (all: %v)", k, hits[k], w, hits)
		}
	}
	ctl("disable", "-p", pid, "fbt:example.com/fbtex/store::")
	work()
}

// TestNetHTTP instruments the standard library: net/http.(*Client).Do, called
// against a loopback server, seen by hooks with its request and response.
func TestNetHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds net/http and what depends on it")
	}
	bin, out, err := buildCmd(t, "./cmd/httpex", filepath.Join(exampleDir(t), "http.rules"))
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	got, err := testutil.Output(bin, nil)
	if err != nil {
		t.Fatalf("httpex: %v\n%s", err, got)
	}
	want := `enter net/http.(*Client).Do GET /a
exit net/http.(*Client).Do 200 OK latency>0=true
enter net/http.(*Client).Do GET /missing
exit net/http.(*Client).Do 404 Not Found latency>0=true
`
	if !strings.HasSuffix(string(got), want) {
		t.Errorf("httpex:\n%s\nwant it to end with:\n%s", got, want)
	}
	for _, name := range []string{"fbt:net/http:http.(*Client).Do:entry", "fbt:net/http:http.(*Client).Do:return"} {
		if !strings.Contains(string(got), name+" sealed-off true") && patching() {
			t.Errorf("httpex: no sealed site of %s that fired:\n%s", name, got)
		}
	}
	if strings.Contains(string(got), "branch-only") && patching() {
		t.Errorf("httpex: branch-only sites:\n%s", got)
	}
}

// TestPanicLines: a panic in a traced call reports the user's file and line.
func TestPanicLines(t *testing.T) {
	bin, out, err := buildExample(t, filepath.Join(exampleDir(t), "fbt.rules"))
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	src, err := os.ReadFile("testdata/example/store/store.go")
	if err != nil {
		t.Fatal(err)
	}
	line := 1 + bytes.Count(src[:bytes.Index(src, []byte("q, r = a/b, a%b"))], []byte("\n"))
	want := fmt.Sprintf("store/store.go:%d ", line)
	for _, mode := range []string{"panic", "plainpanic"} {
		got, _ := testutil.Output(bin, nil, mode)
		if !bytes.Contains(got, []byte("integer divide by zero")) || !bytes.Contains(got, []byte(want)) {
			t.Errorf("ex %s: want the panic at %q:\n%s", mode, want, got)
		}
	}
}

// TestExampleRace runs the hooks check built with -race, at GOMAXPROCS 1, 2 and 8: the
// goroutines of store.Parallel fire and run hooks concurrently.
func TestExampleRace(t *testing.T) {
	if testing.Short() || testutil.Emulated() {
		t.Skip("a -race build of the example")
	}
	bin, out, err := buildExample(t, filepath.Join(exampleDir(t), "fbt.rules"), "-race")
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	want, err := os.ReadFile("testdata/hooks.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, procs := range []string{"1", "2", "8"} {
		got, err := testutil.Output(bin, append(os.Environ(), "GOMAXPROCS="+procs), "hooks")
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("GOMAXPROCS=%s: %v\n%s", procs, err, got)
		}
	}
}

// TestGoTest: go test takes the rules too (with -cover, whose rewrite of the files
// comes first); the package's own tests see its probes.
func TestGoTest(t *testing.T) {
	sdtctl := sdtctlBin(t)
	dir := exampleDir(t)
	for _, extra := range [][]string{nil, {"-cover"}} {
		args := append([]string{"test", "-count=1", "-toolexec", sdtctl + " toolexec -rules " + filepath.Join(dir, "fbt.rules")}, extra...)
		if emu := testutil.Emulator(); emu != "" {
			args = append(args, "-exec", emu)
		}
		cmd := exec.Command("go", append(args, "./store")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOARCH="+runtime.GOARCH, "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ok  \texample.com/fbtex/store") {
			t.Fatalf("go test %v with rules: %v\n%s", extra, err, out)
		}
		if extra != nil && !strings.Contains(string(out), "coverage: ") {
			t.Errorf("go test -cover with rules: no coverage:\n%s", out)
		}
	}
}

// TestInliningReport: with SDT_FBT_INLINING=1 the build names the instrumented
// functions that were inlinable and now are called.
func TestInliningReport(t *testing.T) {
	_, out, err := buildCmdEnv(t, []string{"SDT_FBT_INLINING=1"}, "./cmd/ex", filepath.Join(exampleDir(t), "fbt.rules"))
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, f := range []string{"store.Pair.Sum", "store.Pair.Zero", "store.Blank"} {
		if !strings.Contains(out, "fbt: example.com/fbtex/"+f+" was inlinable") {
			t.Errorf("no inlining report for %s:\n%s", f, out)
		}
	}
	if strings.Contains(out, "store.Parallel was inlinable") {
		t.Errorf("Parallel (goroutines, not inlinable) reported:\n%s", out)
	}
}

// TestMain removes the binaries the tests shared (sdtctl) when they end.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }
