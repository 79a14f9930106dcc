package amd64

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// This file checks the matchers against real compiler output: it writes a small
// module with a fake probe package, builds it for linux/amd64 once per flag
// set, and finds the sites in the ELF through .symtab.

const fixtureModule = "example.com/sdtfix"

// fixtureSDT returns the fake probe package: P0..P6 with the same shape as
// gosdt's (a flag byte first), a generic Probe1, Fire, Enabled, and a
// non-inlined fire.
func fixtureSDT() string {
	var b strings.Builder
	b.WriteString("package sdt\n\nvar last []any\n\n//go:noinline\nfunc keep(a ...any) { last = a }\n\n")
	b.WriteString("func Probe1[A any](p *P1[A], a A) {\n\tif p.on != 0 {\n\t\tp.fire(a)\n\t}\n}\n\n")
	for n := 0; n <= 6; n++ {
		var tparams, params, args []string
		for i := 1; i <= n; i++ {
			tparams = append(tparams, fmt.Sprintf("A%d", i))
			params = append(params, fmt.Sprintf("a%d A%d", i, i))
			args = append(args, fmt.Sprintf("a%d", i))
		}
		typ, decl := fmt.Sprintf("P%d", n), fmt.Sprintf("P%d", n)
		if n > 0 {
			typ += "[" + strings.Join(tparams, ", ") + "]"
			decl += "[" + strings.Join(tparams, ", ") + " any]"
		}
		p, a := strings.Join(params, ", "), strings.Join(args, ", ")
		fmt.Fprintf(&b, "type %s struct {\n\ton   uint8\n\tcore *int\n}\n\n", decl)
		fmt.Fprintf(&b, "func (p *%s) Fire(%s) {\n\tif p.on != 0 {\n\t\tp.fire(%s)\n\t}\n}\n\n", typ, p, a)
		fmt.Fprintf(&b, "func (p *%s) Enabled() bool { return p.on != 0 }\n\n", typ)
		fmt.Fprintf(&b, "//go:noinline\nfunc (p *%s) fire(%s) {\n\tif p.core != nil {\n\t\t*p.core++\n\t}\n\tkeep(%s)\n}\n\n", typ, p, a)
	}
	return b.String()
}

const fixtureLib = `package lib

import "example.com/sdtfix/sdt"

var Probe sdt.P1[int]

func Work(x int) int {
	Probe.Fire(x)
	return x * 3
}
`

const fixtureMain = `package main

import (
	"os"

	"example.com/sdtfix/lib"
	"example.com/sdtfix/sdt"
)

var (
	procExit sdt.P1[int]
	p0       sdt.P0
	p1       sdt.P1[int]
	p2       sdt.P2[int, string]
	p3       sdt.P3[int, string, float64]
	p4       sdt.P4[int, int, int, int]
	p5       sdt.P5[int, string, int, bool, int]
	p6       sdt.P6[int, int, int, int, int, string]
	strProbe sdt.P1[string]
	genProbe sdt.P1[int]
	enProbe  sdt.P1[int]
)

//go:noinline
func loop(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		sdt.Probe1(&procExit, i)
		s += i
	}
	return s
}

//go:noinline
func several(a, b int) int {
	sdt.Probe1(&p1, a)
	x := a * b
	p2.Fire(x, "x")
	x += b
	procExit.Fire(x)
	return x
}

//go:noinline
func strs(s string) {
	strProbe.Fire(s)
	p2.Fire(len(s), s+"!")
}

//go:noinline
func arity(a int) {
	p0.Fire()
	p1.Fire(a)
	p2.Fire(a, "b")
	p3.Fire(a, "c", 1.5)
	p4.Fire(a, a+1, a+2, a+3)
	p5.Fire(a, "e", a*2, a > 3, 5)
	p6.Fire(a, 2, 3, 4, 5, "f")
}

//go:noinline
func useLib(x int) int { return lib.Work(x) + 1 }

//go:noinline
func gen[T any](x T, n int) int {
	genProbe.Fire(n)
	return n + 1
}

//go:noinline
func expensive() int { return len(os.Args) * 7 }

//go:noinline
func enabled() {
	if enProbe.Enabled() {
		enProbe.Fire(expensive())
	}
}

// bigLoop's body after the probe is long, so the skip is a backward rel32.
//
//go:noinline
func bigLoop(xs []int) int {
	s := 0
	for i := range xs {
		procExit.Fire(s)
		s = s*31 + xs[i]
		s ^= s >> 7
		s = s*37 + xs[(i+1)%len(xs)]
		s ^= s << 9
		s = s*41 + xs[(i+2)%len(xs)]
		s ^= s >> 11
		s = s*43 + xs[(i+3)%len(xs)]
		s ^= s << 13
		s = s*47 + xs[(i+5)%len(xs)]
		s ^= s >> 17
		s = s*53 + xs[(i+7)%len(xs)]
	}
	return s
}

// bigEnabled's outer check skips five fire blocks: a forward rel32. The
// compiler drops p1's own check inside (the flag was just tested), so the
// outer site guards p1's fire call.
//
//go:noinline
func bigEnabled(a int) {
	if p1.Enabled() {
		p1.Fire(a)
		p2.Fire(a, "a")
		p3.Fire(a, "b", 1.0)
		p4.Fire(a, 2, 3, 4)
		p6.Fire(a, 2, 3, 4, 5, "x")
	}
}

func main() {
	bigLoop([]int{1, 2, 3})
	bigEnabled(1)
	loop(3)
	several(1, 2)
	strs("a")
	arity(1)
	useLib(2)
	gen(1, 2)
	gen("s", 3)
	enabled()
	os.Exit(lib.Work(3) & 0)
}
`

// fixtureWant is the number of sites per function in optimized builds: sites
// guarding a call to (*P).fire, and Enabled sites guarding other code.
var fixtureWant = map[string]struct{ fire, guard int }{
	"main.loop":                   {1, 0},
	"main.several":                {3, 0},
	"main.strs":                   {2, 0},
	"main.arity":                  {7, 0},
	"main.useLib":                 {1, 0},
	"main.gen[go.shape.int]":      {1, 0},
	"main.gen[go.shape.string]":   {1, 0},
	"main.enabled":                {1, 1},
	"main.bigLoop":                {1, 0},
	"main.bigEnabled":             {5, 0},
	"main.main":                   {1, 0}, // lib.Work inlined
	"example.com/sdtfix/lib.Work": {1, 0}, // only if the linker keeps it
}

// fixtureWantRace overrides fixtureWant under -race: the race instrumentation
// keeps p1's inner check in bigEnabled, so the outer Enabled site guards a
// second CMPB+JE rather than p1's fire call.
var fixtureWantRace = map[string]struct{ fire, guard int }{
	"main.bigEnabled": {5, 1},
}

// guardsUserCode lists the functions with Enabled sites whose guarded block is
// user code rather than a fire call.
var guardsUserCode = map[string]bool{"main.enabled": true, "main.bigEnabled": true}

var fixture struct {
	once sync.Once
	dir  string
	err  error
}

func fixtureDir(t *testing.T) string {
	t.Helper()
	fixture.once.Do(func() {
		dir, err := os.MkdirTemp("", "gosdt-amd64-fixture")
		if err != nil {
			fixture.err = err
			return
		}
		fixture.dir = dir
		files := map[string]string{
			"go.mod":     "module " + fixtureModule + "\n\ngo 1.26\n",
			"sdt/sdt.go": fixtureSDT(),
			"lib/lib.go": fixtureLib,
			"main.go":    fixtureMain,
			"sdt/doc.go": "// Package sdt is a fake of gosdt's probe package.\npackage sdt\n",
			"lib/doc.go": "// Package lib holds a probe inlined into another package.\npackage lib\n",
		}
		for name, src := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				fixture.err = err
				return
			}
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				fixture.err = err
				return
			}
		}
	})
	if fixture.err != nil {
		t.Fatal(fixture.err)
	}
	return fixture.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixture.dir != "" {
		os.RemoveAll(fixture.dir)
	}
	os.Exit(code)
}

// buildFixture builds the fixture for linux/amd64 with the given flags.
func buildFixture(t *testing.T, name string, flags ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: cannot build the compiler-output fixture")
	}
	dir := fixtureDir(t)
	out := filepath.Join(dir, "bin-"+name)
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command(gobin, append(args, ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	if msg, err := cmd.CombinedOutput(); err != nil {
		if slices.Contains(flags, "-race") && (runtime.GOOS != "linux" || runtime.GOARCH != "amd64") {
			t.Skipf("-race build for linux/amd64 needs a linux/amd64 host: %v\n%s", err, msg)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return out
}

// elfFunc is a function symbol in .text.
type elfFunc struct {
	name       string
	start, end uint64
}

type elfBinary struct {
	typ   elf.Type
	text  Bytes
	funcs []elfFunc         // sorted by start
	names map[uint64]string // address -> symbol name (functions and data)
}

func readELF(t *testing.T, path string) *elfBinary {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		t.Fatalf("%s is %v, not x86-64", path, f.Machine)
	}
	sec := f.Section(".text")
	if sec == nil {
		t.Fatalf("%s has no .text", path)
	}
	data, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	b := &elfBinary{text: Bytes{Base: sec.Addr, Code: data}, names: map[uint64]string{}, typ: f.Type}
	textEnd := sec.Addr + sec.Size
	for _, s := range syms {
		if _, dup := b.names[s.Value]; !dup || elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			b.names[s.Value] = s.Name
		}
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value >= sec.Addr && s.Value+s.Size <= textEnd {
			b.funcs = append(b.funcs, elfFunc{s.Name, s.Value, s.Value + s.Size})
		}
	}
	sort.Slice(b.funcs, func(i, j int) bool { return b.funcs[i].start < b.funcs[j].start })
	return b
}

// scanResult is what scanning one binary found.
type scanResult struct {
	fire, guard   map[string]int // per function: sites guarding (*P).fire, others
	candidates    map[string]int // per function: raw 80 3D .. 00 candidates
	rejected      map[string]int // reason class -> count
	decodeErrs    []string
	toggles       map[int]int // user fire sites by toggle length
	backward      int         // user fire sites whose skip goes backward
	funcs, shapes int
}

func isUser(fn string) bool {
	return strings.HasPrefix(fn, "main.") || strings.HasPrefix(fn, fixtureModule+"/")
}

// scan decodes every function of b, matches every candidate, and for the sites
// in user code checks the guarded call, flags, and sled.
func scan(t *testing.T, b *elfBinary) scanResult {
	r := scanResult{fire: map[string]int{}, guard: map[string]int{}, candidates: map[string]int{}, rejected: map[string]int{}, toggles: map[int]int{}}
	isRace := func(target uint64) bool { return strings.HasPrefix(b.names[target], "runtime.race") }
	for _, fn := range b.funcs {
		r.funcs++
		insts, err := DecodeFunc(b.text, fn.start, fn.end, nil)
		if err != nil {
			r.decodeErrs = append(r.decodeErrs, fn.name+": "+err.Error())
			if isUser(fn.name) {
				t.Errorf("%s: %v", fn.name, err)
			}
			continue
		}
		code := b.text.Read(fn.start, int(fn.end-fn.start))
		cands := Candidates(code)
		if len(cands) == 0 {
			continue
		}
		r.candidates[fn.name] += len(cands)
		targets := BranchTargets(insts)
		for _, off := range cands {
			pc := fn.start + uint64(off)
			i, ok := Index(insts, pc)
			if !ok {
				r.rejected["not an instruction boundary"]++
				continue
			}
			s, err := MatchSite(insts, i, targets)
			if err != nil {
				r.rejected["shape: "+err.(*ShapeError).Reason[:min(20, len(err.(*ShapeError).Reason))]]++
				if isUser(fn.name) {
					t.Errorf("%s: %v", fn.name, err)
				}
				continue
			}
			r.shapes++
			if isUser(fn.name) {
				for _, pc := range []uint64{s.Fire(), s.Skip()} {
					if err := FlagsDead(b.text, pc); err != nil {
						t.Errorf("%s: site %#x: %v", fn.name, s.Addr, err)
					}
				}
			}
			g, err := GuardedCall(b.text, s.Fire(), isRace)
			if err != nil {
				if !isUser(fn.name) {
					r.rejected["guarded call"]++
					continue
				}
				// An Enabled check may guard arbitrary code, another check included.
				r.guard[fn.name]++
				if !guardsUserCode[fn.name] {
					t.Errorf("%s: site %#x: %v", fn.name, s.Addr, err)
				}
				t.Logf("%-28s site %#x len %2d %v flag %-18s guards code GuardedCall refuses: %v", fn.name, s.Addr, s.Len, s.Op, b.names[s.Flag], err)
				continue
			}
			callee := b.names[g.Call]
			if !strings.HasSuffix(callee, ").fire") {
				if isUser(fn.name) {
					r.guard[fn.name]++
					if !guardsUserCode[fn.name] {
						t.Errorf("%s: site %#x guards a call to %q, want a (*P).fire", fn.name, s.Addr, callee)
					}
				} else {
					r.rejected["guards no (*P).fire"]++
				}
				continue
			}
			r.fire[fn.name]++
			if !strings.HasPrefix(callee, fixtureModule+"/sdt.(*P") {
				t.Errorf("%s: site %#x calls %q", fn.name, s.Addr, callee)
			}
			if !slices.Contains(g.Leas, s.Flag) {
				t.Errorf("%s: site %#x (flag %#x %s): fire block LEAs %#x miss the flag", fn.name, s.Addr, s.Flag, b.names[s.Flag], g.Leas)
			}
			if b.names[s.Flag] == "" {
				t.Errorf("%s: site %#x: flag %#x is no symbol", fn.name, s.Addr, s.Flag)
			}
			sl, err := Canonical(s)
			if err != nil {
				t.Errorf("%s: %v", fn.name, err)
				continue
			}
			r.toggles[sl.Toggle]++
			if s.Skip() < s.Addr {
				r.backward++
			}
			for _, form := range [][]byte{sl.Off, sl.On} {
				if len(form) != s.Len {
					t.Errorf("%s: sled % x for a %d-byte site", fn.name, form, s.Len)
				}
			}
			t.Logf("%-28s site %#x len %2d %v flag %-18s taken %#x (%+d) toggle %d, guarded %s",
				fn.name, s.Addr, s.Len, s.Op, b.names[s.Flag], s.Taken, int64(s.Taken-s.Next), sl.Toggle, callee)
		}
	}
	return r
}

func TestCompilerOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go module four times")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH: cannot build the compiler-output fixture")
	}
	modes := []struct {
		name    string
		flags   []string
		inlined bool
	}{
		{"default", nil, true},
		{"race", []string{"-race"}, true},
		{"pie", []string{"-buildmode=pie"}, true},
		{"noopt", []string{"-gcflags=all=-N -l"}, false},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			b := readELF(t, buildFixture(t, mode.name, mode.flags...))
			wantType := elf.ET_EXEC
			if slices.Contains(mode.flags, "-buildmode=pie") {
				wantType = elf.ET_DYN
			}
			if b.typ != wantType {
				t.Errorf("ELF type %v, want %v", b.typ, wantType)
			}
			r := scan(t, b)
			total := sum(r.fire)
			t.Logf("%s: %d functions (%d undecodable), %d candidates matched the site shape, %d user fire sites (toggle length: count %v, %d backward), %d user Enabled sites, elsewhere rejected %v",
				mode.name, r.funcs, len(r.decodeErrs), r.shapes, total, r.toggles, r.backward, sum(r.guard), r.rejected)
			for _, e := range r.decodeErrs {
				t.Logf("undecodable: %s", e)
			}
			if len(r.decodeErrs) > r.funcs/100 {
				t.Errorf("%d of %d functions did not decode", len(r.decodeErrs), r.funcs)
			}
			if mode.inlined && (r.toggles[5] == 0 || r.backward == 0) {
				t.Errorf("want sites needing a rel32 toggle and backward skips, got toggles %v, %d backward", r.toggles, r.backward)
			}
			if !mode.inlined {
				for fn, n := range r.candidates {
					if isUser(fn) {
						t.Errorf("%s: %d CMPB $0, X(SB) candidates in a -N -l build, want none", fn, n)
					}
				}
				if total+sum(r.guard) != 0 {
					t.Errorf("-N -l build: %d sites in user code, want none (fire %v, guard %v)", total, r.fire, r.guard)
				}
				return
			}
			for fn, want := range fixtureWant {
				if !hasFunc(b, fn) {
					if fn == "example.com/sdtfix/lib.Work" {
						continue
					}
					t.Errorf("function %s missing from the binary", fn)
					continue
				}
				if w, ok := fixtureWantRace[fn]; ok && slices.Contains(mode.flags, "-race") {
					want = w
				}
				if r.fire[fn] != want.fire || r.guard[fn] != want.guard {
					t.Errorf("%s: %d fire sites, %d Enabled sites; want %d, %d", fn, r.fire[fn], r.guard[fn], want.fire, want.guard)
				}
			}
			for fn := range r.fire {
				if _, ok := fixtureWant[fn]; !ok {
					t.Errorf("unexpected sites in %s", fn)
				}
			}
		})
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func hasFunc(b *elfBinary, name string) bool {
	for _, f := range b.funcs {
		if f.name == name {
			return true
		}
	}
	return false
}
