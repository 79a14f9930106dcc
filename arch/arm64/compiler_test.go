package arm64

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// This file checks the matchers against real compiler output: it writes a small
// module with a fake probe package, builds it for linux/arm64 once per flag
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
		dir, err := os.MkdirTemp("", "gosdt-arm64-fixture")
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

// buildFixture builds the fixture for linux/arm64 with the given flags.
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
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
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
	data  [][2]uint64       // .data, .bss: where probe definitions live
}

func readELF(t *testing.T, path string) *elfBinary {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Fatalf("%s is %v, not AArch64", path, f.Machine)
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
	for _, name := range []string{".data", ".bss"} {
		if s := f.Section(name); s != nil {
			b.data = append(b.data, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
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

func (b *elfBinary) inData(addr uint64) bool {
	for _, r := range b.data {
		if addr >= r[0] && addr < r[1] {
			return true
		}
	}
	return false
}

// scanResult is what scanning one binary found.
type scanResult struct {
	fire, guard map[string]int // per function: sites guarding (*P).fire, others
	loads       map[string]int // per function: flag loads in user code (candidates on data)
	kept        int            // user sites whose flag load must stay
	between     map[int]int    // user sites by instructions between load and branch
	ops         map[string]int // user sites by branch
	backward    int            // user sites whose skip goes backward
	funcs       int
	rejected    map[string]int // non-user candidates by reason class
}

func isUser(fn string) bool {
	return strings.HasPrefix(fn, "main.") || strings.HasPrefix(fn, fixtureModule+"/")
}

// scan decodes every function of b, follows every flag load on data or bss to its
// branch, and for user code checks the guarded call, the register proof and the sled.
func scan(t *testing.T, b *elfBinary) scanResult {
	r := scanResult{fire: map[string]int{}, guard: map[string]int{}, loads: map[string]int{},
		between: map[int]int{}, ops: map[string]int{}, rejected: map[string]int{}}
	call := func(target uint64) CallEffect {
		name := b.names[target]
		switch {
		case strings.HasPrefix(name, fixtureModule+"/sdt.(*P") && strings.HasSuffix(name, ").fire"):
			return CallKills
		case strings.HasPrefix(name, "runtime.panic"):
			return CallNoReturn
		}
		return CallKeeps
	}
	for _, fn := range b.funcs {
		r.funcs++
		code := b.text.Read(fn.start, int(fn.end-fn.start))
		var loads []Load
		for _, l := range Candidates(code, fn.start) {
			if b.inData(l.Flag) {
				loads = append(loads, l)
			}
		}
		if len(loads) == 0 {
			continue
		}
		insts, err := DecodeFunc(b.text, fn.start, fn.end, nil)
		if err != nil {
			t.Errorf("%s: %v", fn.name, err)
			continue
		}
		targets := BranchTargets(insts)
		user := isUser(fn.name)
		for _, l := range loads {
			if user {
				r.loads[fn.name]++
			}
			s, err := FollowLoad(b.text, l)
			if err == nil {
				err = MatchSite(insts, s, targets)
			}
			if err != nil {
				if user {
					t.Errorf("%s: load %#x of %s: %v", fn.name, l.Addr, b.names[l.Flag], err)
				} else {
					r.rejected["shape"]++
				}
				continue
			}
			g, gerr := GuardedCall(b.text, s.Fire(), nil)
			callee := b.names[g.Call]
			fires := gerr == nil && strings.HasSuffix(callee, ").fire")
			if !user {
				if !fires {
					r.rejected["guards no (*P).fire"]++
				}
				continue
			}
			if !fires {
				r.guard[fn.name]++
				if !guardsUserCode[fn.name] {
					t.Errorf("%s: site %#x: guarded call %s %v", fn.name, s.Addr, callee, gerr)
				}
			} else {
				r.fire[fn.name]++
				if !strings.HasPrefix(callee, fixtureModule+"/sdt.(*P") || g.R0 != s.Flag {
					t.Errorf("%s: site %#x calls %q with X0 = %#x, flag %#x", fn.name, s.Addr, callee, g.R0, s.Flag)
				}
			}
			if b.names[s.Flag] == "" {
				t.Errorf("%s: site %#x: flag %#x is no symbol", fn.name, s.Addr, s.Flag)
			}
			sl, err := Canonical(s)
			if err != nil {
				t.Errorf("%s: %v", fn.name, err)
				continue
			}
			dead := LoadDead(b.text, s, call)
			if dead != nil {
				r.kept++
			}
			r.between[s.Between]++
			r.ops[s.Op.String()]++
			if s.Skip() < s.Addr {
				r.backward++
			}
			t.Logf("%-28s load %#x site %#x %v W%d flag %-18s +%d between, B form to %#x, load removable: %v",
				fn.name, s.Load.Addr, s.Addr, s.Op, s.Reg, b.names[s.Flag], s.Between, sl.Target, errString(dead))
		}
	}
	return r
}

func errString(err error) string {
	if err == nil {
		return "yes"
	}
	return "no: " + err.Error()
}

func TestCompilerOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go module three times")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH: cannot build the compiler-output fixture")
	}
	// -race is not in the list: it needs cgo, which a cross-build does not have.
	modes := []struct {
		name    string
		flags   []string
		inlined bool
	}{
		{"default", nil, true},
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
			t.Logf("%s: %d functions, %d user fire sites, %d user Enabled sites (branches %v, instructions between load and branch %v, %d backward), %d loads kept, elsewhere rejected %v",
				mode.name, r.funcs, sum(r.fire), sum(r.guard), r.ops, r.between, r.backward, r.kept, r.rejected)
			if !mode.inlined {
				for fn, n := range r.loads {
					t.Errorf("%s: %d flag loads in a -N -l build, want none", fn, n)
				}
				return
			}
			if r.backward == 0 {
				t.Error("no site with a backward skip (loops)")
			}
			for fn, want := range fixtureWant {
				if !hasFunc(b, fn) {
					if fn == "example.com/sdtfix/lib.Work" {
						continue
					}
					t.Errorf("function %s missing from the binary", fn)
					continue
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
