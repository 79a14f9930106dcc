package arm64

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// arm64asmLacks says why arm64asm's reading of in is not the oracle's to give: the
// encodings the decoder knows and arm64asm (ARMv8.0 and a little more) does not
// decode, or decodes without the registers they use. TestLacks checks those by hand.
func arm64asmLacks(in inst) string {
	switch in.Name() {
	case "UDF":
		return "UDF: arm64asm does not decode it"
	case "BRAAZ", "BLRAAZ", "RETAA", "ERETAA", "BRAA", "BLRAA":
		return "pointer-authenticated branches: arm64asm does not decode them"
	case "XPACLRI", "PACIA1716", "PACIASP":
		return "pointer-authentication hints: arm64asm reads HINT #n, naming no register"
	}
	return ""
}

// agree decodes w at pc with the decoder and with arm64asm. Wherever the decoder knows
// the word, arm64asm must decode it (or it is one of arm64asmLacks), and the two must
// agree on the control flow and the target; the decoder's reads must hold every
// register the oracle's roles say the instruction reads, and its writes be exactly
// those it writes. For an operation whose roles the oracle does not list, every
// register arm64asm names must be read or written, and the writes be among them.
// roles reports whether the oracle listed the roles.
func agree(w uint32, pc uint64) (in inst, x xinst, roles bool, err error) {
	in, x = decodeWord(w, pc), xdecode(w, pc)
	if !in.Known() {
		return in, x, true, nil
	}
	if why := arm64asmLacks(in); why != "" {
		return in, x, true, nil
	}
	if x.Bad {
		return in, x, true, fmt.Errorf("%#08x: the decoder says %v, arm64asm cannot decode it", w, in)
	}
	if in.Flow != xflow(x) || in.Target != x.Target {
		return in, x, true, fmt.Errorf("%#08x: the decoder says %v flow %d target %#x; arm64asm %v: flow %d target %#x", w, in, in.Flow, in.Target, x.Inst, xflow(x), x.Target)
	}
	named, reads, writes, roles := xeffect(x)
	if in.Flow == flowSVC {
		reads = in.Reads // SVC: the decoder counts every register the kernel may read
	}
	switch {
	case roles && (in.Reads != reads || in.Writes != writes):
		err = fmt.Errorf("%#08x %v: reads %s writes %s; arm64asm %v: reads %s writes %s", w, in, regList(in.Reads), regList(in.Writes), x.Inst, regList(reads), regList(writes))
	case !roles && (named&^in.Writes&^in.Reads != 0 || in.Writes&^named != 0):
		err = fmt.Errorf("%#08x %v: reads %s writes %s; arm64asm %v names %s", w, in, regList(in.Reads), regList(in.Writes), x.Inst, regList(named))
	}
	return in, x, roles, err
}

func regList(set uint32) string {
	var s []string
	for ; set != 0; set &= set - 1 {
		s = append(s, fmt.Sprintf("R%d", bits.TrailingZeros32(set)))
	}
	return "{" + strings.Join(s, ",") + "}"
}

// TestDecodeAgreesWithArm64asm checks the decoder against arm64asm on every word of
// real arm64 binaries (built for linux/arm64 on any host; natively also sdt's test
// binary), and logs how many of the words arm64asm decodes the decoder knows, and the
// operations of those it does not. It fails on any disagreement, and when the decoder
// knows less than 99.9% of the words arm64asm decodes.
func TestDecodeAgreesWithArm64asm(t *testing.T) {
	bins := testbin.Binaries(t, &Arch)
	if !testing.Short() && !testutil.Emulated() {
		bins = append(bins, testbin.Read(t, testbin.BuildTest(t, "arm64", "../../sdt"), Arch.Machine))
	}
	for _, b := range bins {
		code := b.Text.Code
		var words, decoded, known, noRoles, fails int
		lacks := map[string]int{}
		unknown := map[string]int{} // arm64asm's operation -> words the decoder does not know
		for off := 0; off+4 <= len(code); off += 4 {
			pc := b.Text.Base + uint64(off)
			in, x, roles, err := agree(binary.LittleEndian.Uint32(code[off:]), pc)
			words++
			if err != nil {
				if fails++; fails <= 20 {
					t.Errorf("%#x: %v", pc, err)
				}
				continue
			}
			if !x.Bad {
				decoded++
			}
			switch {
			case in.Known():
				known++
				if why := arm64asmLacks(in); why != "" {
					lacks[why]++
				}
				if !roles {
					noRoles++
				}
			case !x.Bad:
				if unknown[x.Op.String()]++; unknown[x.Op.String()] == 1 {
					t.Logf("%#x: %#08x %v: arm64asm decodes it, the decoder does not know it", pc, x.Word, x.Inst)
				}
			}
		}
		both := known - sum(lacks)
		t.Logf("%s: %d words; arm64asm decodes %d, the decoder knows %d of them (%.3f%%) and %d it lacks; %d with roles the oracle does not list",
			b.Path, words, decoded, both, 100*float64(both)/float64(max(decoded, 1)), sum(lacks), noRoles)
		if len(unknown) > 0 {
			t.Logf("  arm64asm decodes, the decoder does not know: %s", top(unknown, 12))
		}
		if len(lacks) > 0 {
			t.Logf("  the decoder knows, arm64asm lacks: %s", top(lacks, 4))
		}
		if missed := decoded - both; float64(missed) > 0.001*float64(decoded) {
			t.Errorf("%s: the decoder does not know %d of the %d words arm64asm decodes", b.Path, missed, decoded)
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// top prints the n largest counts of m.
func top(m map[string]int, n int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var s []string
	for _, k := range keys[:min(n, len(keys))] {
		s = append(s, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(keys) > n {
		s = append(s, fmt.Sprintf("and %d more", len(keys)-n))
	}
	return strings.Join(s, ", ")
}

// TestDecodeRandomWords checks the decoder against arm64asm on random words: uniform
// ones (most of them are nothing either knows), and for every row of the table words
// that match its mask with the other bits random, so that each row's fields and
// checks are exercised.
func TestDecodeRandomWords(t *testing.T) {
	n, perRow := 1_000_000, 10_000
	if testing.Short() || testutil.Emulated() {
		n, perRow = 100_000, 300
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	fails, known := 0, 0
	failed := map[string]int{} // by row: the first failure of each is reported
	try := func(w uint32) {
		pc := 0x400000 + uint64(rnd.IntN(1<<20))*4
		in, _, _, err := agree(w, pc)
		if in.Known() {
			known++
		}
		if err != nil {
			fails++
			if failed[in.Name()]++; failed[in.Name()] == 1 {
				t.Error(err)
			}
		}
	}
	for range n {
		try(rnd.Uint32())
	}
	for i := range rows {
		r := &rows[i]
		for range perRow {
			try(r.value | rnd.Uint32()&^r.mask)
		}
	}
	t.Logf("%d uniform words and %d for each of %d rows: %d known to the decoder, %d disagreements", n, perRow, len(rows), known, fails)
	if fails > 0 {
		t.Logf("disagreements by row: %s", top(failed, 20))
	}
}

// TestLacks checks the decoder on the encodings arm64asm does not read (arm64asmLacks),
// by hand from the ARM ARM.
func TestLacks(t *testing.T) {
	for _, c := range []struct {
		w             uint32
		name          string
		flow          flow
		reads, writes uint32
	}{
		{0x00000000, "UDF", flowTrap, 0, 0},
		{0x0000BEEF, "UDF", flowTrap, 0, 0},
		{0xD61F081F, "BRAAZ", flowBR, 1 << 0, 0},                    // BRAAZ X0
		{0xD61F0C3F, "BRAAZ", flowBR, 1 << 1, 0},                    // BRABZ X1
		{0xD63F085F, "BLRAAZ", flowBLR, 1 << 2, 1 << 30},            // BLRAAZ X2
		{0xD65F0BFF, "RETAA", flowRET, 1 << 30, 0},                  // RETAA
		{0xD65F0FFF, "RETAA", flowRET, 1 << 30, 0},                  // RETAB
		{0xD69F0BFF, "ERETAA", flowTrap, 0, 0},                      // ERETAA
		{0xD71F0865, "BRAA", flowBR, 1<<3 | 1<<5, 0},                // BRAA X3, X5
		{0xD73F0C9F, "BLRAA", flowBLR, 1 << 4, 1 << 30},             // BLRAB X4, SP
		{0xD50320FF, "XPACLRI", flowNext, 1 << 30, 1 << 30},         // XPACLRI
		{0xD503211F, "PACIA1716", flowNext, 1<<16 | 1<<17, 1 << 17}, // PACIA1716
		{0xD50321DF, "PACIA1716", flowNext, 1<<16 | 1<<17, 1 << 17}, // AUTIB1716
		{0xD503233F, "PACIASP", flowNext, 1 << 30, 1 << 30},         // PACIASP
		{0xD50323FF, "PACIASP", flowNext, 1 << 30, 1 << 30},         // AUTIBSP
		{0xD503213F, "", 0, 0, 0},                                   // HINT #9: not allocated, not known
		{0xD503251F, "", 0, 0, 0},                                   // HINT #40, CHKFEAT X16: not known
		{0xD503245F, "BTI", flowNext, 0, 0},                         // BTI c
	} {
		in := decodeWord(c.w, 0x1000)
		if in.Name() != c.name || in.Known() && (in.Flow != c.flow || in.Reads != c.reads || in.Writes != c.writes) {
			t.Errorf("%#08x: %v flow %d reads %s writes %s; want %q flow %d reads %s writes %s",
				c.w, in, in.Flow, regList(in.Reads), regList(in.Writes), c.name, c.flow, regList(c.reads), regList(c.writes))
		}
	}
}

// TestBitMask checks the logical immediates against arm64asm's reading of ORR.
func TestBitMask(t *testing.T) {
	var valid, reserved int
	for sf := range uint32(2) {
		for n := range uint32(2) {
			for immr := range uint32(64) {
				for imms := range uint32(64) {
					w := sf<<31 | 0x320003E0 | n<<22 | immr<<16 | imms<<10 // ORR Rd0, ZR, #imm
					v, ok := bitMask(sf, n, immr, imms)
					x := xdecode(w, 0)
					if ok && x.Bad {
						t.Fatalf("%#08x: valid, arm64asm cannot decode it", w)
					}
					if !ok {
						if !x.Bad {
							reserved++ // arm64asm reads the reserved all-ones element
						}
						continue
					}
					valid++
					var want uint64
					var regs regValues
					xtrack64(x, &regs, 0)
					want, _ = regs.get(0)
					if v != want {
						t.Fatalf("%#08x: %#x, arm64asm %v: %#x", w, v, x.Inst, want)
					}
				}
			}
		}
	}
	t.Logf("%d valid logical immediates agree; arm64asm also decodes %d reserved ones (an element of all ones)", valid, reserved)
}
