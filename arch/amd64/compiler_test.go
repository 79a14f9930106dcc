package amd64

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
// module with a fake probe package, builds it for linux/amd64 once per flag
// set, and finds the sites in the ELF through .symtab.

func TestMain(m *testing.M) {
	code := m.Run()
	fixture.Cleanup()
	os.Exit(code)
}

func buildFixture(t *testing.T, name string, flags ...string) string {
	return fixture.Build(t, "amd64", name, flags...)
}

func readELF(t *testing.T, path string) *fixture.Binary {
	return fixture.Read(t, path, elf.EM_X86_64)
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
	return strings.HasPrefix(fn, "main.") || strings.HasPrefix(fn, fixture.Module+"/")
}

// scan decodes every function of b, matches every candidate, and for the sites
// in user code checks the guarded call, flags, and sled.
func scan(t *testing.T, b *fixture.Binary) scanResult {
	r := scanResult{fire: map[string]int{}, guard: map[string]int{}, candidates: map[string]int{}, rejected: map[string]int{}, toggles: map[int]int{}}
	isRace := func(target uint64) bool { return strings.HasPrefix(b.Names[target], "runtime.race") }
	for _, fn := range b.Funcs {
		r.funcs++
		insts, err := DecodeFunc(b.Text, fn.Start, fn.End, nil)
		if err != nil {
			r.decodeErrs = append(r.decodeErrs, fn.Name+": "+err.Error())
			if isUser(fn.Name) {
				t.Errorf("%s: %v", fn.Name, err)
			}
			continue
		}
		code := b.Text.Read(fn.Start, int(fn.End-fn.Start))
		cands := Candidates(code)
		if len(cands) == 0 {
			continue
		}
		r.candidates[fn.Name] += len(cands)
		targets := BranchTargets(insts)
		for _, off := range cands {
			pc := fn.Start + uint64(off)
			i, ok := Index(insts, pc)
			if !ok {
				r.rejected["not an instruction boundary"]++
				continue
			}
			s, err := MatchSite(insts, i, targets)
			if err != nil {
				r.rejected["shape: "+err.(*ShapeError).Reason[:min(20, len(err.(*ShapeError).Reason))]]++
				if isUser(fn.Name) {
					t.Errorf("%s: %v", fn.Name, err)
				}
				continue
			}
			r.shapes++
			if isUser(fn.Name) {
				for _, pc := range []uint64{s.Fire(), s.Skip()} {
					if err := FlagsDead(b.Text, pc); err != nil {
						t.Errorf("%s: site %#x: %v", fn.Name, s.Addr, err)
					}
				}
			}
			g, err := GuardedCall(b.Text, s.Fire(), isRace)
			if err != nil {
				if !isUser(fn.Name) {
					r.rejected["guarded call"]++
					continue
				}
				// An Enabled check may guard arbitrary code, another check included.
				r.guard[fn.Name]++
				if !fixture.GuardsUserCode[fn.Name] {
					t.Errorf("%s: site %#x: %v", fn.Name, s.Addr, err)
				}
				t.Logf("%-28s site %#x len %2d %v flag %-18s guards code GuardedCall refuses: %v", fn.Name, s.Addr, s.Len, s.Op, b.Names[s.Flag], err)
				continue
			}
			callee := b.Names[g.Call]
			if !strings.HasSuffix(callee, ").fire") {
				if isUser(fn.Name) {
					r.guard[fn.Name]++
					if !fixture.GuardsUserCode[fn.Name] {
						t.Errorf("%s: site %#x guards a call to %q, want a (*P).fire", fn.Name, s.Addr, callee)
					}
				} else {
					r.rejected["guards no (*P).fire"]++
				}
				continue
			}
			r.fire[fn.Name]++
			if !strings.HasPrefix(callee, fixture.Module+"/sdt.(*P") {
				t.Errorf("%s: site %#x calls %q", fn.Name, s.Addr, callee)
			}
			if !slices.Contains(g.Leas, s.Flag) {
				t.Errorf("%s: site %#x (flag %#x %s): fire block LEAs %#x miss the flag", fn.Name, s.Addr, s.Flag, b.Names[s.Flag], g.Leas)
			}
			if b.Names[s.Flag] == "" {
				t.Errorf("%s: site %#x: flag %#x is no symbol", fn.Name, s.Addr, s.Flag)
			}
			sl, err := Canonical(s)
			if err != nil {
				t.Errorf("%s: %v", fn.Name, err)
				continue
			}
			r.toggles[sl.Toggle]++
			if s.Skip() < s.Addr {
				r.backward++
			}
			for _, form := range [][]byte{sl.Off, sl.On} {
				if len(form) != s.Len {
					t.Errorf("%s: sled % x for a %d-byte site", fn.Name, form, s.Len)
				}
			}
			t.Logf("%-28s site %#x len %2d %v flag %-18s taken %#x (%+d) toggle %d, guarded %s",
				fn.Name, s.Addr, s.Len, s.Op, b.Names[s.Flag], s.Taken, int64(s.Taken-s.Next), sl.Toggle, callee)
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
			if b.Type != wantType {
				t.Errorf("ELF type %v, want %v", b.Type, wantType)
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
			for fn, want := range fixture.Want {
				if !b.HasFunc(fn) {
					if fn == "example.com/sdtfix/lib.Work" {
						continue
					}
					t.Errorf("function %s missing from the binary", fn)
					continue
				}
				if w, ok := fixture.WantRace[fn]; ok && slices.Contains(mode.flags, "-race") {
					want = w
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
