package offline_test

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/arch/amd64"
	"github.com/gosdt/gosdt/arch/arm64"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/sled"
	"github.com/gosdt/gosdt/sled/offline"
)

// TestArch checks what each description says of its ELF files.
func TestArch(t *testing.T) {
	for m, a := range map[elf.Machine]*arch.Offline{elf.EM_X86_64: &amd64.Offline, elf.EM_AARCH64: &arm64.Offline} {
		if got := offline.Arch(m); got != a || elf.Machine(a.Machine) != m {
			t.Errorf("offline.Arch(%v) = %v; %s's machine is %v", m, got, a.Name, elf.Machine(a.Machine))
		}
	}
	if offline.Arch(elf.EM_386) != nil {
		t.Error("an architecture for EM_386")
	}
}

func isUser(fn string) bool {
	return strings.HasPrefix(fn, "main.") || strings.HasPrefix(fn, fixtureModule+"/lib.")
}

// TestCompilerOutput runs discovery (offline.Discover: the runtime's loop, with each
// architecture's description) on the compiler's output: the fixture built for amd64
// and arm64, optimized (also as a PIE and, on a linux/amd64 host, with -race) and
// without optimization. Optimized, every site of the user's code is found, is a fire or
// a guard site as the source says, and has a sled; sites needing a 5-byte toggle (amd64)
// and loops' backward skips are among them. Without optimization no check of the
// user's code is a candidate, and the checks inside the probe package are refused.
func TestCompilerOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go module seven times")
	}
	dir := writeFixture(t)
	for _, a := range []*arch.Arch{&amd64.Arch, &arm64.Arch} {
		for _, mode := range fixtureModes {
			t.Run(a.Name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				path := testbin.Build(t, dir, a.Name, ".", mode.flags...)
				b := readFixture(t, path, elf.Machine(a.Machine))
				if wantType := elf.ET_EXEC; b.Type != wantType && !slices.Contains(mode.flags, "-buildmode=pie") {
					t.Errorf("ELF type %v, want %v", b.Type, wantType)
				}
				tab, err := offline.Discover(path)
				if err != nil {
					t.Fatal(err)
				}
				checkSites(t, a, b, tab, mode.inlined, slices.Contains(mode.flags, "-race"))
			})
		}
	}
}

// fixtureModes are the builds of the fixture: the flags that change Go's code, and
// whether the probe checks are inlined.
var fixtureModes = []struct {
	name    string
	flags   []string
	inlined bool
}{
	{"default", nil, true},
	{"race", []string{"-race"}, true},
	{"pie", []string{"-buildmode=pie"}, true},
	{"noopt", []string{"-gcflags=all=-N -l"}, false},
}

func checkSites(t *testing.T, a *arch.Arch, b *fixtureBin, tab *sled.Table, inlined, race bool) {
	fire, guard := map[string]int{}, map[string]int{}
	var rel32, backward, kept int
	for _, s := range tab.Sites {
		fn := b.funcAt(uint64(s.Addr))
		if !isUser(fn) {
			if inlined || s.Refusal.Cause != sled.InProbePackage {
				t.Errorf("site %#x in %s: %+v", s.Addr, fn, s.Refusal)
			}
			continue
		}
		if !inlined {
			t.Errorf("%s: site %#x in a build that does not inline", fn, s.Addr)
			continue
		}
		if !s.Sealable() {
			t.Errorf("%s: site %#x refused: %v", fn, s.Addr, s.Refusal)
			continue
		}
		if s.Kind == sled.Fire {
			fire[fn]++
		} else {
			guard[fn]++
		}
		if b.Names[uint64(s.Flag)] == "" {
			t.Errorf("%s: site %#x: flag %#x is no symbol", fn, s.Addr, s.Flag)
		}
		if a.Name == "amd64" && (s.Off[0] == 0xE9 || s.On[0] == 0xE9) {
			rel32++
		}
		if to := jumpTarget(a, s); to < uint64(s.Addr) {
			backward++
		}
		if s.Note != "" {
			kept++
		}
		t.Logf("%-28s site %#x len %2d %-5v toggle %d at +%d flag %-18s %s", fn, s.Addr, s.Len, s.Kind, s.Toggle, s.ToggleAt, b.Names[uint64(s.Flag)], s.Note)
	}
	for _, r := range tab.Rejected {
		if fn := b.funcAt(uint64(r.Addr)); isUser(fn) {
			t.Errorf("%s: candidate %#x (flag %s) rejected: %s", fn, r.Addr, b.Names[uint64(r.Flag)], r.Reason)
		}
	}
	t.Logf("%d candidates: %d sites (%d in user code with a rel32 jump, %d skipping backward, %d keeping their flag load), %d rejected",
		tab.Candidates, len(tab.Sites), rel32, backward, kept, len(tab.Rejected))
	if !inlined {
		return
	}
	if a.Name == "amd64" && rel32 == 0 || backward == 0 {
		t.Errorf("want sites needing a rel32 jump (amd64) and backward skips, got %d, %d", rel32, backward)
	}
	for fn, w := range want {
		if !b.hasFunc(fn) {
			if fn != fixtureModule+"/lib.Work" {
				t.Errorf("function %s missing from the binary", fn)
			}
			continue
		}
		if r, ok := wantRace[fn]; ok && race {
			w = r
		}
		if fire[fn] != w.Fire || guard[fn] != w.Guard {
			t.Errorf("%s: %d fire sites, %d guard sites; want %d, %d", fn, fire[fn], guard[fn], w.Fire, w.Guard)
		}
	}
	for fn := range fire {
		if _, ok := want[fn]; !ok {
			t.Errorf("unexpected sites in %s", fn)
		}
	}
}

// jumpTarget is where the jump form of a site's sled goes, where its compiler's branch
// went when taken: EB rel8 or E9 rel32 (amd64), B imm26 (arm64), its first instruction.
// Where both forms jump (amd64 rel8), the other one goes to the end of the site.
func jumpTarget(a *arch.Arch, s sled.Site) uint64 {
	end := uint64(s.Addr) + uint64(s.Len)
	to := func(code []byte) (uint64, bool) {
		at := uint64(s.Addr)
		switch {
		case !a.Jumps(code):
			return 0, false
		case a.Name == "arm64":
			return at + uint64(int64(int32(binary.LittleEndian.Uint32(code)<<6)>>6)*4), true
		case code[0] == 0xEB:
			return at + 2 + uint64(int64(int8(code[1]))), true
		}
		return at + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(code[1:])))), true
	}
	if t, ok := to(s.Off); ok && t != end {
		return t
	}
	t, _ := to(s.On)
	return t
}

// TestHolder builds sdtctl's test target for amd64 and arm64, as linked by default,
// without DWARF, without DWARF and symbols, and as a PIE, and requires every site's
// holder to be what the live path names: the function and line of the probe statement
// in main.go, not the inlined body of sdt's Probe2.
func TestHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program eight times")
	}
	line := lineOf(t, "../../cmd/sdtctl/testdata/target/main.go", "sdt.Probe2(&tick")
	for _, goarch := range []string{"amd64", "arm64"} {
		for _, flags := range [][]string{nil, {"-ldflags=-w"}, {"-ldflags=-s -w"}, {"-buildmode=pie"}} {
			name := goarch + strings.Join(flags, "")
			t.Run(name, func(t *testing.T) {
				bin := testbin.Build(t, "", goarch, "../../cmd/sdtctl/testdata/target", flags...)
				tab, err := offline.Discover(bin)
				if err != nil {
					t.Fatal(err)
				}
				if len(tab.Sites) == 0 {
					t.Fatal("no sites")
				}
				for _, s := range tab.Sites {
					h := s.Describe()
					if h.Module != "main" || h.Func != "main.step" || !strings.HasSuffix(h.File, "/main.go") || h.Line != line {
						t.Errorf("site %#x held by %+v, want main.step at main.go:%d", s.Addr, h, line)
					}
				}
			})
		}
	}
}

// lineOf is the line of file on which text first stands.
func lineOf(t *testing.T, file, text string) int {
	src, err := os.ReadFile(file)
	i := strings.Index(string(src), text)
	if err != nil || i < 0 {
		t.Fatalf("%q in %s: %v", text, file, err)
	}
	return 1 + strings.Count(string(src[:i]), "\n")
}
