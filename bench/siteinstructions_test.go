package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sled/offline"
)

// TestSiteInstructions runs bench/internal/alignedprog (probe sites at every address
// modulo 8, with rel8 and rel32 jumps over their fire blocks) under callgrind and
// counts, site by site, the instructions retired inside the site's bytes per call:
// sealed and disabled it must be exactly one (the sled's jump), at every address. With
// SDT_PATCH=off the same sites keep the compiler's check, logged for comparison.
// linux/amd64 only: valgrind is an amd64 program here, and arm64's sled is one
// instruction by construction (B or NOP: TestToggleLayouts checks its layout under
// qemu).
func TestSiteInstructions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a program under valgrind twice")
	}
	if testutil.Emulated() || runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("callgrind runs linux/amd64 programs here")
	}
	valgrind := testutil.NeedCommand(t, "valgrind")
	bin := testbin.Build(t, "", "amd64", "./internal/alignedprog")
	tab, err := offline.Discover(bin)
	if err != nil {
		t.Fatal(err)
	}
	type site struct {
		fn        string
		addr, len uint64
	}
	var sites []site
	for _, s := range tab.Sites {
		if fn := s.Describe().Func; strings.HasPrefix(fn, "main.aligned") && s.Sealable() {
			sites = append(sites, site{fn, uint64(s.Addr), uint64(s.Len)})
		}
	}
	if len(sites) < 32 {
		t.Fatalf("%d sealable sites in the aligned functions, want 32", len(sites))
	}
	const calls = 1000
	sealed := instructionsAt(t, valgrind, bin, calls, "on")
	branch := instructionsAt(t, valgrind, bin, calls, "off")
	residues := map[uint64]int{}
	for _, s := range sites {
		var in, br uint64
		for pc, ir := range sealed {
			if pc >= s.addr && pc < s.addr+s.len {
				in += ir
			}
		}
		for pc, ir := range branch {
			if pc >= s.addr && pc < s.addr+s.len {
				br += ir
			}
		}
		t.Logf("%-20s site %#x addr%%8=%d len %2d: sealed %.2f instructions a call, branch check %.2f", s.fn, s.addr, s.addr%8, s.len, float64(in)/calls, float64(br)/calls)
		if in != calls {
			t.Errorf("%s: site %#x (addr%%8=%d) retires %.3f instructions a call sealed and disabled, want 1", s.fn, s.addr, s.addr%8, float64(in)/calls)
		}
		residues[s.addr%8]++
	}
	if len(residues) != 8 {
		t.Errorf("sites only at addr%%8 in %v: the generated functions no longer cover every residue", residues)
	}
}

// instructionsAt runs bin -n calls under callgrind with SDT_PATCH=patch and returns the
// instructions retired at each address of the whole run. One P, no asynchronous
// preemption and no RDTSCP, as bench/callgrind.sh says why.
func instructionsAt(t *testing.T, valgrind, bin string, calls int, patch string) map[uint64]uint64 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "callgrind.out")
	cmd := exec.Command(valgrind, "--tool=callgrind", "--smc-check=all", "--dump-instr=yes", "--dump-line=no",
		"--compress-pos=no", "--compress-strings=no", "--callgrind-out-file="+out, bin, "-n", strconv.Itoa(calls))
	cmd.Env = append(os.Environ(), "SDT_PATCH="+patch, "SDT_CONTROL=off", "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("valgrind %s (SDT_PATCH=%s): %v\n%s", bin, patch, err, msg)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Cost lines are "0xADDR Ir"; the line after a "calls=" line is the call's
	// inclusive cost, not instructions at that address.
	irs := map[uint64]uint64{}
	sc := bufio.NewScanner(f)
	skip := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "calls=") {
			skip = true
			continue
		}
		if skip {
			skip = false
			continue
		}
		var pc, ir uint64
		if n, _ := fmt.Sscanf(line, "0x%x %d", &pc, &ir); n == 2 {
			irs[pc] += ir
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(irs) == 0 {
		t.Fatalf("callgrind %s: no instruction counts in %s", bin, out)
	}
	return irs
}
