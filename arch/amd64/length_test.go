package amd64

import (
	"bytes"
	"debug/gosym"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testutil"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
)

// x86asmWrong says why x86asm's reading of in is wrong, for the errata of x86asm that
// Go's code meets; "" where x86asm is right. objdump checks the decoder's reading of
// each (checkObjdump).
func x86asmWrong(in *inst) string {
	switch {
	case in.enc == encVEX && in.m == map0F && in.op == 0x77:
		return "VZEROUPPER/VZEROALL: x86asm reads a ModRM byte they do not have"
	case in.legacy(map0F38, 0xF6):
		return "ADCX/ADOX: x86asm decodes the prefix alone"
	}
	return ""
}

// agreement is the decoder's and x86asm's readings of one instruction.
type agreement struct {
	in    inst
	known bool  // the decoder knows it
	x     xinst // x86asm's reading
	xerr  error // x86asm cannot decode it
	wrong string
}

// next is how far the instruction goes: the decoder's length where x86asm is known to
// be wrong or cannot decode it, else x86asm's.
func (a *agreement) next() int {
	if a.wrong != "" || a.xerr != nil {
		return int(a.in.n)
	}
	return a.x.Len
}

// agree decodes the instruction at the start of b (at pc) with the decoder and with
// x86asm. Wherever the decoder answers, it must agree with x86asm exactly: the length,
// the kind of control transfer, a direct branch's target, a RIP-relative operand's
// address, the kinds the proofs look for (agreeKinds), and flagEffect must be no less
// conservative than the oracle's table (agreeFlags); or the instruction is one of
// x86asm's errata (x86asmWrong).
func agree(b []byte, pc uint64) (a agreement, err error) {
	a.known = decodeInst(b, &a.in)
	a.x, a.xerr = xdecode(b[:min(len(b), maxInstLen)], pc)
	if a.xerr == nil && a.x.Op == 0 {
		a.xerr = fmt.Errorf("x86asm decodes no instruction (%d bytes)", a.x.Len)
	}
	if !a.known {
		if len(b) >= maxInstLen {
			if n, _, _, ok := quickLength(b); ok {
				return a, fmt.Errorf("% x: quickLength says %d bytes, decodeInst does not know it", b[:n], n)
			}
		}
		return a, nil
	}
	in := &a.in
	// quickLength reads maxInstLen bytes: check it on short inputs too, padded.
	padded := b
	if len(b) < maxInstLen {
		padded = append(b[:len(b):len(b)], make([]byte, maxInstLen)...)
	}
	if n, flow, rel, ok := quickLength(padded); ok && (n != int(in.n) || flow != in.flow || rel != in.rel) {
		return a, fmt.Errorf("% x: quickLength %d, %v, %d; decodeInst %d bytes, %v, %d", b[:in.n], n, flow, rel, in.n, in.flow, in.rel)
	}
	if a.wrong = x86asmWrong(in); a.wrong != "" {
		return a, nil
	}
	if a.xerr != nil {
		return a, fmt.Errorf("% x: the decoder says %d bytes (%v), x86asm cannot decode it: %v", b[:in.n], in.n, in.flow, a.xerr)
	}
	var target, mem uint64
	if in.flow == flowJcc || in.flow == flowJmp || in.flow == flowCall {
		target = in.target(pc)
	}
	xmem := a.x.Mem
	if in.rip {
		mem = in.mem(pc)
		if d, ok := xabsolute(a.x); ok && in.enc != encLegacy && d == in.disp {
			xmem = mem // x86asm reads a VEX or EVEX [RIP+disp32] as [disp32]
		}
	}
	if int(in.n) != a.x.Len || in.flow != xflowOf(a.x) || target != a.x.Target || mem != xmem {
		return a, fmt.Errorf("% x: the decoder says %d bytes, flow %v, target %#x, mem %#x; x86asm %v: %d bytes, flow %v, target %#x, mem %#x",
			b[:max(int(in.n), a.x.Len)], in.n, in.flow, target, mem, a.x.Inst, a.x.Len, xflowOf(a.x), a.x.Target, a.x.Mem)
	}
	if err := agreeFlags(in, a.x); err != nil {
		return a, fmt.Errorf("% x: %v", b[:in.n], err)
	}
	if err := agreeKinds(in, pc, a.x); err != nil {
		return a, fmt.Errorf("% x: %v", b[:in.n], err)
	}
	return a, nil
}

// agreeKinds checks the decoder's classifications that the proofs rely on against
// x86asm's reading: a NOP, a JE, a JNE, a RIP-relative LEA (and its address) exactly
// where x86asm says so.
func agreeKinds(in *inst, pc uint64, x xinst) error {
	lea := in.legacy(mapOne, 0x8D) && in.rip
	if in.isNOP() != (x.Op == xNOP) || in.isJcc(ccE) != (x.Op == xJE) || in.isJcc(ccNE) != (x.Op == xJNE) ||
		lea != (x.Op == xLEA && x.Mem != 0) || lea && in.mem(pc) != x.Mem {
		return fmt.Errorf("NOP %v, JE %v, JNE %v, LEA RIP %v; x86asm %v (mem %#x)", in.isNOP(), in.isJcc(ccE), in.isJcc(ccNE), lea, x.Inst, x.Mem)
	}
	return nil
}

// errata collects the instructions where x86asm is known to be wrong, for objdump.
type errata struct {
	count   map[string]int
	samples map[string]int // bytes -> the decoder's length
}

func (e *errata) add(b []byte, a *agreement) {
	if e.count == nil {
		e.count, e.samples = map[string]int{}, map[string]int{}
	}
	e.count[a.wrong]++
	e.samples[string(b[:a.in.n])] = int(a.in.n)
}

func (e *errata) String() string {
	var s []string
	for why, n := range e.count {
		s = append(s, fmt.Sprintf("%s (%d)", why, n))
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}

// checkObjdump checks the decoder's length of every sample against GNU objdump's, where
// objdump is installed: the third opinion on the instructions x86asm reads wrong.
func (e *errata) checkObjdump(t *testing.T) {
	t.Helper()
	if len(e.samples) == 0 {
		return
	}
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Logf("no objdump: the decoder's reading of %d instructions x86asm reads wrong is not checked", len(e.samples))
		return
	}
	// Each sample at the start of a 32-byte slot, NOPs after it: objdump must decode an
	// instruction at the slot's start of the decoder's length.
	var code []byte
	var want []int
	for s, n := range e.samples {
		slot := append([]byte(s), bytes.Repeat([]byte{0x90}, 32-len(s))...)
		code = append(code, slot...)
		want = append(want, n)
	}
	file := filepath.Join(t.TempDir(), "errata.bin")
	if err := os.WriteFile(file, code, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(objdump, "-D", "-b", "binary", "-m", "i386:x86-64", "--insn-width=15", file).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	got := map[int]int{} // offset -> length
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		off, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(f[0], ":")), 16, 64)
		if err != nil {
			continue
		}
		got[int(off)] = len(strings.Fields(f[1]))
	}
	for i, n := range want {
		if got[i*32] != n {
			t.Errorf("% x: the decoder says %d bytes, objdump %d", code[i*32:i*32+n], n, got[i*32])
		}
	}
	t.Logf("objdump agrees on the %d instructions x86asm reads wrong", len(want))
}

// TestLengthAgreesWithX86asm walks every function of real amd64 binaries (this test
// binary, the go command and the compiler; gofmt built for amd64 on another host)
// linearly from its entry to its end with x86asm, and checks the decoder on every
// instruction. It logs how many instructions the decoder knew and which it did not;
// it fails on any disagreement, and when more than one function in a thousand cannot
// be swept to its end (x86asm cannot decode a byte the decoder does not know either:
// crypto/internal/boring/sig's markers are data), so that no code goes unchecked
// without saying so.
func TestLengthAgreesWithX86asm(t *testing.T) {
	var wrong errata
	for _, b := range testbin.Binaries(t, &Arch) {
		var total, known int
		unknown := map[string]int{}
		stopped := sweep(t, b, func(fn *gosym.Func, pc uint64, code []byte, a *agreement) {
			total++
			switch {
			case a.wrong != "":
				wrong.add(code, a)
				known++
			case a.known:
				known++
			default:
				unknown[fmt.Sprintf("%v % x in %s", a.x.Op, code[:min(a.x.Len, 4)], fn.Name)]++
			}
		})
		if total == 0 {
			t.Fatalf("%s: no instructions checked", b.Path)
		}
		t.Logf("%s: %d functions, %d instructions checked, %.3f%% known to the decoder (%d not), %d sweeps stopped at undecodable bytes; not known: %s",
			b.Path, len(b.Funcs), total, 100*float64(known)/float64(total), total-known, stopped, top(unknown, 20))
		if stopped > len(b.Funcs)/1000 {
			t.Errorf("%s: %d of %d functions could not be swept to their end", b.Path, stopped, len(b.Funcs))
		}
	}
	t.Logf("x86asm's errata: %v", &wrong)
	wrong.checkObjdump(t)
}

// sweep reads every function of b linearly from its entry to its end with agree, and
// calls each for every instruction: x86asm's length, or the decoder's where x86asm
// reads it wrong or not at all. It fails t on disagreements, and stops a function
// where neither reads an instruction; it returns how many it stopped.
func sweep(t *testing.T, b *testbin.Binary, each func(fn *gosym.Func, pc uint64, code []byte, a *agreement)) (stopped int) {
	t.Helper()
	fails := 0
	for i := range b.Funcs {
		fn := &b.Funcs[i]
		for pc := fn.Entry; pc < fn.End; {
			code := b.Text.Read(pc, int(fn.End-pc))
			a, err := agree(code, pc)
			if err != nil {
				if fails++; fails <= 20 {
					t.Errorf("%s+%#x: %v", fn.Name, pc-fn.Entry, err)
				}
			}
			if !a.known && a.xerr != nil {
				// Neither decodes it: the rest of the function is not checked. Count
				// it; a Go function should never do this.
				stopped++
				t.Logf("%s+%#x: % x: x86asm: %v (sweep of the function stops)", fn.Name, pc-fn.Entry, code[:min(len(code), 8)], a.xerr)
				break
			}
			each(fn, pc, code, &a)
			pc += uint64(a.next())
		}
	}
	return stopped
}

// top lists the n most frequent keys of counts, with their counts.
func top(counts map[string]int, n int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j]
	})
	var s []string
	for _, k := range keys[:min(len(keys), n)] {
		s = append(s, fmt.Sprintf("%s (%d)", k, counts[k]))
	}
	return strings.Join(s, ", ")
}

// FuzzLength checks the decoder against x86asm on arbitrary bytes: wherever it
// answers, x86asm decodes the same length, control transfer and target.
func FuzzLength(f *testing.F) {
	for _, s := range [][]byte{
		{0x80, 0x3D, 1, 2, 3, 4, 0}, {0x74, 0x10}, {0x0F, 0x84, 1, 0, 0, 0}, {0xE8, 0, 0, 0, 0},
		{0x48, 0x8D, 0x05, 1, 2, 3, 4}, {0x66, 0x0F, 0x1F, 0x44, 0, 0}, {0xF3, 0x0F, 0x10, 0x44, 0x24, 8},
		{0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8}, {0x41, 0xFF, 0xD4}, {0xC3}, {0xCC}, {0x66, 0x81, 0xF9, 1, 2},
		{0x48, 0x69, 0xC0, 1, 2, 3, 4}, {0xF3, 0x48, 0xAB}, {0x0F, 0xBA, 0xE0, 3}, {0x48, 0xC7, 0x44, 0x24, 8, 1, 2, 3, 4},
		{0x42, 0x8B, 0x04, 0x25, 1, 2, 3, 4}, {0xF2, 0x0F, 0x2C, 0xC0}, {0x66, 0x0F, 0xD6, 0x04, 0x24},
		{0x64, 0x4C, 0x8B, 0x34, 0x25, 0xF8, 0xFF, 0xFF, 0xFF}, {0xF0, 0x48, 0x0F, 0xC1, 0x0B}, {0xF0, 0x0F, 0xB1, 0x11},
		{0x66, 0x0F, 0x38, 0xDC, 0xC1}, {0x66, 0x0F, 0x3A, 0x0F, 0xC1, 8}, {0x66, 0x0F, 0x72, 0xF0, 7},
		{0xC4, 0x63, 0x7B, 0xF0, 0xC8, 0x0D}, {0xC4, 0xE2, 0x7B, 0xF6, 0xC3}, {0xC5, 0xFE, 0x6F, 0x06}, {0xC5, 0xF8, 0x77},
		{0x62, 0xF1, 0xFE, 0x48, 0x6F, 0x04, 0x24}, {0x62, 0xF3, 0x75, 0x48, 0x25, 0xC2, 0x96}, {0x66, 0x4C, 0x0F, 0x38, 0xF6, 0xEB},
		{0xF2, 0x48, 0x0F, 0x38, 0xF1, 0xC1}, {0xC2, 8, 0}, {0xE2, 0xFE}, {0xCD, 3}, {0x3E, 0x74, 0x10}, {0x2E, 0x0F, 0x85, 1, 0, 0, 0},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := agree(b, 0x400000); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLengthExhaustive checks the decoder against x86asm on every opcode of the four
// legacy maps, under every prefix combination it accepts and some it refuses, with a
// spread of ModRM, SIB and operand bytes; and on every VEX and EVEX opcode of the
// three maps with random prefix fields: the cases a fuzzer would take long to reach.
func TestLengthExhaustive(t *testing.T) {
	prefixes := [][]byte{nil, {0x66}, {0xF3}, {0xF2}, {0x66, 0x66}, {0x48}, {0x41}, {0x4C}, {0x66, 0x48}, {0xF3, 0x48},
		{0xF2, 0x41}, {0x66, 0x41}, {0xF0}, {0xF0, 0x48}, {0xF0, 0x66}, {0x66, 0xF0}, {0xF0, 0xF3}, {0x64}, {0x65, 0x48},
		{0x64, 0x66}, {0x2E}, {0x3E}, {0x66, 0xF2}, {0xF2, 0x66}, {0x66, 0xF2, 0x48}, {0x48, 0x66}, {0x67}, {0xF0, 0x64}, {0x66, 0x66, 0x2E}}
	escapes := [][]byte{nil, {0x0F}, {0x0F, 0x38}, {0x0F, 0x3A}}
	modrms := []byte{0x00, 0x04, 0x05, 0x0C, 0x15, 0x24, 0x3D, 0x44, 0x4C, 0x80, 0x84, 0xBC, 0xC0, 0xC8, 0xD0, 0xD8, 0xE0, 0xE8, 0xF0, 0xF8, 0xF9, 0xFF}
	sibs := []byte{0x00, 0x24, 0x25, 0x65, 0xE5}
	tail := []byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}
	var checked, known, fails int
	check := func(b []byte) {
		a, err := agree(b, 0x400000)
		checked++
		if a.known {
			known++
		}
		if err != nil {
			if fails++; fails <= 200 {
				t.Error(err)
			}
		}
	}
	if testutil.Emulated() {
		// The decoder is the same code on every host, and native runs check every
		// combination: under an emulator, a few prefixes of each kind suffice.
		prefixes = [][]byte{nil, {0x66}, {0xF3, 0x48}, {0xF0}, {0x65, 0x48}, {0x66, 0xF2, 0x48}}
	}
	for _, p := range prefixes {
		for _, esc := range escapes {
			for op := 0; op < 256; op++ {
				for _, m := range modrms {
					for _, s := range sibs {
						check(slices.Concat(p, esc, []byte{byte(op), m, s}, tail))
					}
				}
			}
		}
	}
	legacy := checked
	// VEX and EVEX: each map and opcode with random register bits, vvvv, L, W, pp,
	// broadcast, mask and zeroing, and ModRM, SIB and displacement bytes.
	rnd := rand.New(rand.NewPCG(3, 4))
	for m := byte(map0F); m <= map0F3A; m++ {
		for op := 0; op < 256; op++ {
			for range 300 {
				modrm, sib := byte(rnd.Uint32()), byte(rnd.Uint32())
				r := byte(rnd.Uint32())
				p1 := byte(rnd.Uint32())
				var b []byte
				switch rnd.IntN(3) {
				case 0:
					if m != map0F {
						continue
					}
					b = []byte{0xC5, p1, byte(op), modrm, sib}
				case 1:
					b = []byte{0xC4, r&0xE0 | m, p1, byte(op), modrm, sib}
				default:
					p2 := byte(rnd.Uint32())
					p0 := r&0xF0 | m
					if rnd.IntN(16) == 0 {
						p0 = r // reserved bits and maps 0, 4-7 too
					}
					b = []byte{0x62, p0, p1 | 4&^byte(rnd.IntN(16)/15*4), p2, byte(op), modrm, sib}
				}
				check(slices.Concat(b, tail))
			}
		}
	}
	t.Logf("%d encodings checked (%d legacy, %d VEX/EVEX), %d known to the decoder", checked, legacy, checked-legacy, known)
}

// TestWalkMatchesDecodeFunc walks every function of real binaries with walk and with
// decodeFunc (x86asm throughout), from its entry to its end in the function table, and
// requires the same instruction starts, end and branch targets: the walk that
// discovery uses proves exactly what the full decode proves. Functions that hold one
// of x86asm's errata (x86asmWrong) are counted and left out.
func TestWalkMatchesDecodeFunc(t *testing.T) {
	for _, b := range testbin.Binaries(t, &Arch)[:1] {
		var funcs, insts, errs, erratic int
		for _, fn := range b.Funcs {
			if hasErratum(b.Text, fn.Entry, fn.End) {
				erratic++
				continue
			}
			want, werr := xdecodeFunc(b.Text, fn.Entry, fn.End)
			got, gerr := walk(b.Text, fn.Entry, fn.End)
			if (werr != nil) != (gerr != nil) {
				t.Errorf("%s: decodeFunc error %v, walk error %v", fn.Name, werr, gerr)
				continue
			}
			if werr != nil {
				errs++
				continue
			}
			funcs++
			insts += len(want)
			if got.Insts != len(want) || got.End != want[len(want)-1].End() {
				t.Errorf("%s: walk %d instructions to %#x, decodeFunc %d to %#x", fn.Name, got.Insts, got.End, len(want), want[len(want)-1].End())
				continue
			}
			starts := 0
			for pc := got.Entry; pc < got.End; pc++ {
				if got.IsStart(pc) {
					starts++
				}
			}
			if starts != len(want) {
				t.Errorf("%s: %d instruction starts, decodeFunc %d", fn.Name, starts, len(want))
			}
			for j, in := range want {
				if !got.IsStart(in.PC) {
					t.Errorf("%s: instruction %d at %#x is not a start of the walk", fn.Name, j, in.PC)
					break
				}
			}
			if targets := targetsOf(want); !slices.Equal(got.Targets, targets) {
				t.Errorf("%s: branch targets %#x, decodeFunc's %#x", fn.Name, got.Targets, targets)
			}
		}
		t.Logf("%s: %d functions agree (%d instructions), %d undecodable by both, %d left out for x86asm's errata", b.Path, funcs, insts, errs, erratic)
		if funcs < len(b.Funcs)*99/100 {
			t.Errorf("only %d of %d functions compared", funcs, len(b.Funcs))
		}
	}
}

// hasErratum reports whether the decoder's walk of [entry, end) meets an instruction
// x86asm reads wrong.
func hasErratum(m arch.Memory, entry, end uint64) bool {
	for pc := entry; pc < end; {
		var in inst
		if !decodeInst(m.Read(pc, int(min(end-pc, maxInstLen))), &in) {
			return false
		}
		if x86asmWrong(&in) != "" {
			return true
		}
		pc += uint64(in.n)
	}
	return false
}
