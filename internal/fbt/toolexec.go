package fbt

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The go command compiles a package that a rule instruments without knowing that its
// rewritten files import the runtime of generated code (SDTPath, which imports package
// sdt): it is not in the package's import config, and may not have been built at all.
// Like OpenTelemetry's compile-time instrumentation and cmd/cover, the wrapper fills
// that in: it has the runtime built (go list -export -deps, run in the rules file's
// directory, whose module must require github.com/gosdt/gosdt) with the build's GOOS,
// GOARCH and -race, and adds it and its dependencies (sdt among them) to the import
// config of the compile, and of the link. The compiler's tool ID carries the rules
// file's hash and the runtime's export file, so the build cache tells instrumented
// compiles apart.

// Tool is the state of one toolexec run with rules.
type Tool struct {
	Rules *Rules
	Dir   string // where go list runs: the rules file's directory
}

// Load parses the rules file at path (which must be absolute: the go command runs
// toolexec in each package's directory).
func Load(path string) (*Tool, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("-rules %s: give an absolute path (go runs the tools in each package's directory), e.g. -rules $PWD/%s", path, path)
	}
	rs, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	return &Tool{Rules: rs, Dir: filepath.Dir(path)}, nil
}

// SDT is package sdt as built for this build: export files of it and its dependencies.
type SDT struct {
	Export map[string]string // import path -> export file
}

// resolveSDT builds sdt for the build configuration (race or not), once per
// configuration: the answer is kept in a file the next tool runs read.
func (t *Tool) resolveSDT(race bool) (*SDT, error) {
	goflags := filterToolexec(os.Getenv("GOFLAGS"))
	// Kept for one go command (our parent, with its start time against pid reuse):
	// the next build may follow a change of sdt's source.
	key := hash([]byte(strings.Join([]string{t.Dir, runtime.Version(), os.Getenv("GOOS"), os.Getenv("GOARCH"),
		strconv.FormatBool(race), goflags, os.Getenv("CGO_ENABLED"), parentID()}, "\x00")))
	cache := filepath.Join(os.TempDir(), "gosdt-fbt-"+strconv.Itoa(os.Getuid()), "sdt-"+key)
	if b, err := os.ReadFile(cache); err == nil {
		if s := parseExports(b); s != nil {
			return s, nil
		}
	}
	args := []string{"list", "-export", "-deps", "-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}"}
	if race {
		args = append(args, "-race")
	}
	args = append(args, SDTPath)
	cmd := exec.Command("go", args...)
	cmd.Dir = t.Dir
	cmd.Env = append(os.Environ(), "GOFLAGS="+goflags)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("building %s for the instrumented packages (go list in %s; its module must require github.com/gosdt/gosdt): %v\n%s", SDTPath, t.Dir, err, stderr.Bytes())
	}
	s := parseExports(out)
	if s == nil {
		return nil, fmt.Errorf("go list -export %s gave no export file", SDTPath)
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o700); err == nil {
		pruneCache(filepath.Dir(cache))
		tmp := fmt.Sprintf("%s.%d", cache, os.Getpid())
		if os.WriteFile(tmp, out, 0o600) == nil {
			os.Rename(tmp, cache)
		}
	}
	return s, nil
}

// pruneCache removes the answers of go commands that ran more than a day ago: one
// file per build accumulates otherwise.
func pruneCache(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "sdt-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// parentID names the go command that runs this tool: its pid and start time.
func parentID() string {
	pid := os.Getppid()
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		if f := strings.Fields(string(b[i+1:])); len(f) > 19 {
			return fmt.Sprintf("%d@%s", pid, f[19])
		}
	}
	return fmt.Sprintf("%d@%d", pid, os.Getpid()) // no /proc: no sharing
}

func parseExports(b []byte) *SDT {
	s := &SDT{Export: map[string]string{}}
	for _, line := range strings.Split(string(b), "\n") {
		if p, f, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			if _, err := os.Stat(f); err != nil {
				return nil // the cache was cleaned
			}
			s.Export[p] = f
		}
	}
	if s.Export[SDTPath] == "" {
		return nil
	}
	return s
}

// filterToolexec drops -toolexec from GOFLAGS, so that building sdt does not run us.
func filterToolexec(goflags string) string {
	var keep []string
	for _, f := range strings.Fields(goflags) {
		if !strings.HasPrefix(f, "-toolexec") && !strings.HasPrefix(f, "--toolexec") {
			keep = append(keep, f)
		}
	}
	return strings.Join(keep, " ")
}

// ToolID is what to add to the compiler's -V=full line.
func (t *Tool) ToolID() string {
	id := "sdtctl-fbt/1 rules=" + t.Rules.Hash
	if os.Getenv("SDT_FBT_INLINING") == "1" {
		id += " inlining-report" // a build that reports compiles again
	}
	// The rewriter is part of the compiler now: a new sdtctl must not reuse what an
	// old one compiled.
	if exe, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(exe); err == nil {
			id += " sdtctl=" + hash(b)
		}
	}
	if s, err := t.resolveSDT(false); err == nil {
		id += " sdt=" + hash([]byte(s.Export[SDTPath]))
	}
	return id
}

// Compile rewrites the files of a compile command line that rules match, and returns
// the command line to run instead. Messages for the user go to warn.
//
// With SDT_FBT_INLINING=1 in the environment it also compiles the package as written
// (with -m, output thrown away) and reports the instrumented functions that were
// inlinable: the gates' calls put every instrumented function over the inlining
// budget, so its callers now call it.
func (t *Tool) Compile(tool string, args []string, warn func(string)) ([]string, func(), error) {
	pkg, cfg, race := "", "", false
	var files []int
	for i, a := range args {
		switch {
		case a == "-p" && i+1 < len(args):
			pkg = args[i+1]
		case a == "-importcfg" && i+1 < len(args):
			cfg = args[i+1]
		case a == "-race":
			race = true
		case strings.HasSuffix(a, ".go") && !strings.HasPrefix(a, "-"):
			files = append(files, i)
		}
	}
	noop := func() {}
	rules := t.Rules.ForPackage(pkg)
	if len(rules) == 0 || cfg == "" || len(files) == 0 {
		return args, noop, nil
	}
	sdt, err := t.resolveSDT(race)
	if err != nil {
		return nil, noop, err
	}
	if _, dep := sdt.Export[pkg]; dep {
		t.record(pkg, nil)
		warn(fmt.Sprintf("fbt: %s is a package gosdt's sdt depends on; it cannot be instrumented (rules on lines %s)", pkg, lines(rules)))
		return args, noop, nil
	}
	paths := make([]string, len(files))
	for i, fi := range files {
		paths[i] = args[fi]
	}
	res, err := Rewrite(pkg, paths, rules)
	if err != nil {
		return nil, noop, err
	}
	t.record(pkg, res)
	for _, s := range res.Skipped {
		warn("fbt: " + s)
	}
	if os.Getenv("SDT_FBT_INLINING") == "1" && len(res.Funcs) > 0 {
		for _, f := range inlinable(tool, args, res.Funcs) {
			warn(fmt.Sprintf("fbt: %s.%s was inlinable; instrumented, it is called (its gates call the traced copy)", pkg, f))
		}
	}
	if len(res.Files) == 0 {
		return args, noop, nil
	}
	dir, err := os.MkdirTemp("", "gosdt-fbt-")
	if err != nil {
		return nil, noop, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	out := append([]string(nil), args...)
	for i, fi := range files {
		b, ok := res.Files[paths[i]]
		if !ok {
			continue
		}
		np := filepath.Join(dir, fmt.Sprintf("%d_%s", i, filepath.Base(paths[i])))
		if err := os.WriteFile(np, b, 0o600); err != nil {
			cleanup()
			return nil, noop, err
		}
		out[fi] = np
	}
	ncfg, err := addImports(cfg, sdt, dir)
	if err != nil {
		cleanup()
		return nil, noop, err
	}
	for i, a := range out {
		if a == "-importcfg" {
			out[i+1] = ncfg
		}
	}
	return out, cleanup, nil
}

// inlinable compiles the package as written with -m and returns those of funcs the
// compiler could inline.
func inlinable(tool string, args, funcs []string) []string {
	dir, err := os.MkdirTemp("", "gosdt-fbt-inl-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(dir)
	var a []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-o", "-asmhdr", "-linkobj", "-symabis":
			if i+1 < len(args) {
				if args[i] != "-symabis" {
					a = append(a, args[i], filepath.Join(dir, strings.TrimPrefix(args[i], "-")))
				} else {
					a = append(a, args[i], args[i+1])
				}
				i++
				continue
			}
		}
		a = append(a, args[i])
	}
	cmd := exec.Command(tool, append([]string{"-m"}, a...)...)
	out, _ := cmd.CombinedOutput()
	can := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if _, name, ok := strings.Cut(line, ": can inline "); ok {
			can[strings.Fields(name)[0]] = true
		}
	}
	var hit []string
	for _, f := range funcs {
		if can[f] {
			hit = append(hit, f)
		}
	}
	return hit
}

// Link adds sdt to a link's import config, and reports the rules that matched no
// function of the program.
func (t *Tool) Link(args []string, warn func(string)) ([]string, func(), error) {
	cfg, race := "", false
	for i, a := range args {
		switch {
		case a == "-importcfg" && i+1 < len(args):
			cfg = args[i+1]
		case a == "-race":
			race = true
		}
	}
	noop := func() {}
	if cfg == "" {
		return args, noop, nil
	}
	pkgs, err := packagesIn(cfg)
	if err != nil {
		return nil, noop, err
	}
	t.reportUnmatched(pkgs, warn)
	sdt, err := t.resolveSDT(race)
	if err != nil {
		return nil, noop, err
	}
	dir, err := os.MkdirTemp("", "gosdt-fbt-link-")
	if err != nil {
		return nil, noop, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	ncfg, err := addImports(cfg, sdt, dir)
	if err != nil {
		cleanup()
		return nil, noop, err
	}
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == "-importcfg" {
			out[i+1] = ncfg
		}
	}
	return out, cleanup, nil
}

// addImports writes a copy of the import config cfg with the packages of sdt that it
// lacks.
func addImports(cfg string, sdt *SDT, dir string) (string, error) {
	b, err := os.ReadFile(cfg)
	if err != nil {
		return "", err
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "packagefile "); ok {
			p, _, _ := strings.Cut(rest, "=")
			have[p] = true
		}
	}
	var add []string
	for p, f := range sdt.Export {
		if !have[p] {
			add = append(add, "packagefile "+p+"="+f)
		}
	}
	sort.Strings(add)
	out := append(bytes.TrimRight(b, "\n"), '\n')
	out = append(out, strings.Join(add, "\n")+"\n"...)
	n := filepath.Join(dir, "importcfg")
	return n, os.WriteFile(n, out, 0o600)
}

func packagesIn(cfg string) (map[string]bool, error) {
	f, err := os.Open(cfg)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pkgs := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "packagefile "); ok {
			p, _, _ := strings.Cut(rest, "=")
			pkgs[p] = true
		}
	}
	return pkgs, sc.Err()
}

// The rules a package's compile matched are kept beside the build (a compile the
// build cache answers does not run again), so that the link can report the rules that
// matched nothing.
func (t *Tool) stateDir() string {
	return filepath.Join(os.TempDir(), "gosdt-fbt-"+strconv.Itoa(os.Getuid()), "rules-"+t.Rules.Hash)
}

func (t *Tool) record(pkg string, res *Result) {
	dir := t.stateDir()
	if os.MkdirAll(dir, 0o700) != nil {
		return
	}
	var b strings.Builder
	if res != nil {
		for line := range res.Matched {
			fmt.Fprintf(&b, "%d\n", line)
		}
	}
	name := filepath.Join(dir, stateName(pkg))
	tmp := fmt.Sprintf("%s.%d", name, os.Getpid())
	if os.WriteFile(tmp, []byte(b.String()), 0o600) == nil {
		os.Rename(tmp, name)
	}
}

func stateName(pkg string) string {
	h := sha256.Sum256([]byte(pkg))
	return hex.EncodeToString(h[:8])
}

func (t *Tool) reportUnmatched(pkgs map[string]bool, warn func(string)) {
	matched := map[int]bool{}
	seen := map[string]bool{}
	for _, r := range t.Rules.Rules {
		if !pkgs[r.Pkg] || seen[r.Pkg] {
			continue
		}
		seen[r.Pkg] = true
		b, err := os.ReadFile(filepath.Join(t.stateDir(), stateName(r.Pkg)))
		if err != nil {
			continue
		}
		for _, l := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(l); err == nil {
				matched[n] = true
			}
		}
	}
	for _, r := range t.Rules.Rules {
		switch {
		case !pkgs[r.Pkg]:
			warn(fmt.Sprintf("fbt: %s:%d: %s matches nothing: package %s is not in this program", t.Rules.Path, r.Line, r.Text, r.Pkg))
		case !matched[r.Line]:
			warn(fmt.Sprintf("fbt: %s:%d: %s matches no function of package %s", t.Rules.Path, r.Line, r.Text, r.Pkg))
		}
	}
}

func lines(rs []Rule) string {
	var s []string
	for _, r := range rs {
		s = append(s, strconv.Itoa(r.Line))
	}
	return strings.Join(s, ", ")
}
