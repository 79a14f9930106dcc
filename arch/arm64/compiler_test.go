package arm64

import (
	"debug/elf"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch/internal/fixture"
)

// This file checks the matchers against real compiler output: it writes a small
// module with a fake probe package, builds it for linux/arm64 once per flag
// set, and finds the sites in the ELF through .symtab.

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.Cleanup()
	os.Exit(code)
}

func buildFixture(t *testing.T, name string, flags ...string) string {
	return fixture.Build(t, "arm64", name, flags...)
}

func readELF(t *testing.T, path string) *fixture.Binary {
	return fixture.Read(t, path, elf.EM_AARCH64)
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
	return strings.HasPrefix(fn, "main.") || strings.HasPrefix(fn, fixture.Module+"/")
}

// scan decodes every function of b, follows every flag load on data or bss to its
// branch, and for user code checks the guarded call, the register proof and the sled.
func scan(t *testing.T, b *fixture.Binary) scanResult {
	r := scanResult{fire: map[string]int{}, guard: map[string]int{}, loads: map[string]int{},
		between: map[int]int{}, ops: map[string]int{}, rejected: map[string]int{}}
	call := func(target uint64) CallEffect {
		name := b.Names[target]
		switch {
		case strings.HasPrefix(name, fixture.Module+"/sdt.(*P") && strings.HasSuffix(name, ").fire"):
			return CallKills
		case strings.HasPrefix(name, "runtime.panic"):
			return CallNoReturn
		}
		return CallKeeps
	}
	for _, fn := range b.Funcs {
		r.funcs++
		code := b.Text.Read(fn.Start, int(fn.End-fn.Start))
		var loads []Load
		for _, l := range Candidates(code, fn.Start) {
			if b.InData(l.Flag) {
				loads = append(loads, l)
			}
		}
		if len(loads) == 0 {
			continue
		}
		insts, err := DecodeFunc(b.Text, fn.Start, fn.End, nil)
		if err != nil {
			t.Errorf("%s: %v", fn.Name, err)
			continue
		}
		targets := BranchTargets(insts)
		user := isUser(fn.Name)
		for _, l := range loads {
			if user {
				r.loads[fn.Name]++
			}
			s, err := FollowLoad(b.Text, l)
			if err == nil {
				err = MatchSite(insts, s, targets)
			}
			if err != nil {
				if user {
					t.Errorf("%s: load %#x of %s: %v", fn.Name, l.Addr, b.Names[l.Flag], err)
				} else {
					r.rejected["shape"]++
				}
				continue
			}
			g, gerr := GuardedCall(b.Text, s.Fire(), nil)
			callee := b.Names[g.Call]
			fires := gerr == nil && strings.HasSuffix(callee, ").fire")
			if !user {
				if !fires {
					r.rejected["guards no (*P).fire"]++
				}
				continue
			}
			if !fires {
				r.guard[fn.Name]++
				if !fixture.GuardsUserCode[fn.Name] {
					t.Errorf("%s: site %#x: guarded call %s %v", fn.Name, s.Addr, callee, gerr)
				}
			} else {
				r.fire[fn.Name]++
				if !strings.HasPrefix(callee, fixture.Module+"/sdt.(*P") || g.R0 != s.Flag {
					t.Errorf("%s: site %#x calls %q with X0 = %#x, flag %#x", fn.Name, s.Addr, callee, g.R0, s.Flag)
				}
			}
			if b.Names[s.Flag] == "" {
				t.Errorf("%s: site %#x: flag %#x is no symbol", fn.Name, s.Addr, s.Flag)
			}
			sl, err := Canonical(s)
			if err != nil {
				t.Errorf("%s: %v", fn.Name, err)
				continue
			}
			dead := LoadDead(b.Text, s, call)
			if dead != nil {
				r.kept++
			}
			r.between[s.Between]++
			r.ops[s.Op.String()]++
			if s.Skip() < s.Addr {
				r.backward++
			}
			t.Logf("%-28s load %#x site %#x %v W%d flag %-18s +%d between, B form to %#x, load removable: %v",
				fn.Name, s.Load.Addr, s.Addr, s.Op, s.Reg, b.Names[s.Flag], s.Between, sl.Target, errString(dead))
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
			if b.Type != wantType {
				t.Errorf("ELF type %v, want %v", b.Type, wantType)
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
			for fn, want := range fixture.Want {
				if !b.HasFunc(fn) {
					if fn == "example.com/sdtfix/lib.Work" {
						continue
					}
					t.Errorf("function %s missing from the binary", fn)
					continue
				}
				if r.fire[fn] != want.Fire || r.guard[fn] != want.Guard {
					t.Errorf("%s: %d fire sites, %d Enabled sites; want %d, %d", fn, r.fire[fn], r.guard[fn], want.Fire, want.Guard)
				}
			}
			for fn := range r.fire {
				if _, ok := fixture.Want[fn]; !ok {
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
